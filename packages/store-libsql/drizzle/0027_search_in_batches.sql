-- The search index is written in batches instead of by a trigger on each registration: indexing ~1,000 new agents at
-- once costs ~5 µs each against ~32 µs one by one (FTS5's cost is mostly per flush; bench/CHANGES.md). Every agent
-- whose rowid is at most `through` is in agent_search exactly as the triggers keep it; the agents past it (the tail,
-- new registrations) are in it not at all: searches also read the tail, testing each agent's text, so an agent is
-- found the moment its registration is answered. A pass (searchIndex.ts) indexes the tail and moves `through` in one
-- transaction, so a crash leaves either both or neither, and a start indexes whatever tail a crash left.
CREATE TABLE `agent_search_indexed` (
	`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
	`through` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `agent_search_indexed` (`id`, `through`) VALUES (1, (SELECT coalesce(max(`rowid`), 0) FROM `agents`));
--> statement-breakpoint
DROP TRIGGER `agents_insert_indexes_search`;
--> statement-breakpoint
DROP TRIGGER `agents_delete_unindexes_search`;
--> statement-breakpoint
DROP TRIGGER `agents_update_reindexes_search`;
--> statement-breakpoint
-- A new agent takes the rowid after the largest, past `through` (the delete trigger keeps `through` at most the largest
-- rowid): into the tail. Only an agent written with an old rowid by hand is indexed at once.
CREATE TRIGGER `agents_insert_indexes_search` AFTER INSERT ON `agents` WHEN new.`listing` <> 'deleted' AND new.`rowid` <= (SELECT `through` FROM `agent_search_indexed` WHERE `id` = 1) BEGIN INSERT INTO `agent_search`(`rowid`, `name`, `bio`, `skill_text`) VALUES (new.`rowid`, lower(new.`name`), lower(coalesce(new.`bio`, '')), lower(new.`skill_text`)); END;
--> statement-breakpoint
-- Deleting the agent with the largest rowid would let the next agent take that rowid, at or below `through`: `through`
-- comes down to the largest rowid left, so the next agent is in the tail.
CREATE TRIGGER `agents_delete_unindexes_search` AFTER DELETE ON `agents` BEGIN DELETE FROM `agent_search` WHERE `rowid` = old.`rowid`; UPDATE `agent_search_indexed` SET `through` = min(`through`, (SELECT coalesce(max(`rowid`), 0) FROM `agents`)) WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `agents_update_reindexes_search` AFTER UPDATE OF `name`, `bio`, `skill_text`, `listing` ON `agents` WHEN old.`rowid` <= (SELECT `through` FROM `agent_search_indexed` WHERE `id` = 1) BEGIN DELETE FROM `agent_search` WHERE `rowid` = old.`rowid`; INSERT INTO `agent_search`(`rowid`, `name`, `bio`, `skill_text`) SELECT new.`rowid`, lower(new.`name`), lower(coalesce(new.`bio`, '')), lower(new.`skill_text`) WHERE new.`listing` <> 'deleted'; END;
