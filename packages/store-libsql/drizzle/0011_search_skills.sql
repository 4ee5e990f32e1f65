ALTER TABLE `agents` ADD `skill_text` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `cheapest_price_base_units` integer;--> statement-breakpoint
ALTER TABLE `agents` ADD `sells_free` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `agents_by_age` ON `agents` ("created_at" desc,`name_key`);--> statement-breakpoint
CREATE INDEX `agents_by_price` ON `agents` ("cheapest_price_base_units" is null,`cheapest_price_base_units`,"last_active_at" desc,`name_key`);--> statement-breakpoint
CREATE INDEX `agents_by_last_seen` ON `agents` (`last_seen`);--> statement-breakpoint
-- Data move: each agent's skills as the search text, cheapest price and free flag the store now writes with them
-- (names, slugs and descriptions joined by char(31), U+001F, which a query cannot hold).
UPDATE `agents` SET
  `skill_text` = coalesce((SELECT group_concat(s.`name` || char(31) || s.`slug` || char(31) || coalesce(s.`description`, ''), char(31))
    FROM `skills` s WHERE s.`agent_key` = `agents`.`name_key`), ''),
  `cheapest_price_base_units` = (SELECT min(s.`price_base_units`) FROM `skills` s
    WHERE s.`agent_key` = `agents`.`name_key` AND s.`type` = 'purchasable'),
  `sells_free` = EXISTS (SELECT 1 FROM `skills` s WHERE s.`agent_key` = `agents`.`name_key` AND s.`type` = 'free');
--> statement-breakpoint
-- The search index now holds the skill text beside name and bio (an FTS5 table's columns are fixed: rebuilt whole).
DROP TRIGGER `agents_insert_indexes_search`;
--> statement-breakpoint
DROP TRIGGER `agents_delete_unindexes_search`;
--> statement-breakpoint
DROP TRIGGER `agents_update_reindexes_search`;
--> statement-breakpoint
DROP TABLE `agent_search`;
--> statement-breakpoint
CREATE VIRTUAL TABLE `agent_search` USING fts5(`name`, `bio`, `skill_text`, content='agents', content_rowid='rowid', tokenize='trigram');
--> statement-breakpoint
INSERT INTO `agent_search`(`agent_search`) VALUES ('rebuild');
--> statement-breakpoint
CREATE TRIGGER `agents_insert_indexes_search` AFTER INSERT ON `agents` BEGIN INSERT INTO `agent_search`(`rowid`, `name`, `bio`, `skill_text`) VALUES (new.`rowid`, new.`name`, new.`bio`, new.`skill_text`); END;
--> statement-breakpoint
CREATE TRIGGER `agents_delete_unindexes_search` AFTER DELETE ON `agents` BEGIN INSERT INTO `agent_search`(`agent_search`, `rowid`, `name`, `bio`, `skill_text`) VALUES ('delete', old.`rowid`, old.`name`, old.`bio`, old.`skill_text`); END;
--> statement-breakpoint
CREATE TRIGGER `agents_update_reindexes_search` AFTER UPDATE OF `name`, `bio`, `skill_text` ON `agents` BEGIN INSERT INTO `agent_search`(`agent_search`, `rowid`, `name`, `bio`, `skill_text`) VALUES ('delete', old.`rowid`, old.`name`, old.`bio`, old.`skill_text`); INSERT INTO `agent_search`(`rowid`, `name`, `bio`, `skill_text`) VALUES (new.`rowid`, new.`name`, new.`bio`, new.`skill_text`); END;
