-- The few withdrawn listings, so a list's count is its filters' count (from their own indexes) less the withdrawn
-- agents among them, instead of a count that reads every agent to test its listing (store-libsql agentList.ts).
CREATE INDEX `agents_withdrawn` ON `agents` (`name_key`) WHERE "agents"."listing" = 'deleted';
