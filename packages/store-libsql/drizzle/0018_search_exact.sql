-- The search index answers q alone, without reading the agents it finds: it holds the listed agents' texts lower-cased
-- as SQLite's lower() does (ASCII letters only) under a case-sensitive trigram tokenizer, so a phrase of q lower-cased
-- the same way matches exactly the agents whose name, bio or skill text holds q (the literal, ASCII-case-insensitive
-- test every store applies), and withdrawn listings are not in it. Before, the index folded case more widely than
-- lower() and held withdrawn agents, so each candidate was read to test it again: 10,000 matches at 100,000 agents
-- counted in 16.7 ms instead of 3.1 ms. Contentless (the texts are agents' own), with deletes by rowid.
DROP TRIGGER `agents_insert_indexes_search`;
--> statement-breakpoint
DROP TRIGGER `agents_delete_unindexes_search`;
--> statement-breakpoint
DROP TRIGGER `agents_update_reindexes_search`;
--> statement-breakpoint
DROP TABLE `agent_search`;
--> statement-breakpoint
CREATE VIRTUAL TABLE `agent_search` USING fts5(`name`, `bio`, `skill_text`, content='', contentless_delete=1, tokenize='trigram case_sensitive 1');
--> statement-breakpoint
INSERT INTO `agent_search`(`rowid`, `name`, `bio`, `skill_text`)
  SELECT `rowid`, lower(`name`), lower(coalesce(`bio`, '')), lower(`skill_text`) FROM `agents` WHERE `listing` <> 'deleted';
--> statement-breakpoint
CREATE TRIGGER `agents_insert_indexes_search` AFTER INSERT ON `agents` WHEN new.`listing` <> 'deleted' BEGIN INSERT INTO `agent_search`(`rowid`, `name`, `bio`, `skill_text`) VALUES (new.`rowid`, lower(new.`name`), lower(coalesce(new.`bio`, '')), lower(new.`skill_text`)); END;
--> statement-breakpoint
CREATE TRIGGER `agents_delete_unindexes_search` AFTER DELETE ON `agents` BEGIN DELETE FROM `agent_search` WHERE `rowid` = old.`rowid`; END;
--> statement-breakpoint
CREATE TRIGGER `agents_update_reindexes_search` AFTER UPDATE OF `name`, `bio`, `skill_text`, `listing` ON `agents` BEGIN DELETE FROM `agent_search` WHERE `rowid` = old.`rowid`; INSERT INTO `agent_search`(`rowid`, `name`, `bio`, `skill_text`) SELECT new.`rowid`, lower(new.`name`), lower(coalesce(new.`bio`, '')), lower(new.`skill_text`) WHERE new.`listing` <> 'deleted'; END;
