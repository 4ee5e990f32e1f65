-- Substring search of agents by name or bio (the q of the agent list) through a trigram index, so a search does not
-- read every agent. It indexes the agents table itself (external content, keyed by rowid); after a VACUUM, which may
-- renumber rowids, rebuild it: INSERT INTO agent_search(agent_search) VALUES ('rebuild').
CREATE VIRTUAL TABLE `agent_search` USING fts5(`name`, `bio`, content='agents', content_rowid='rowid', tokenize='trigram');
--> statement-breakpoint
INSERT INTO `agent_search`(`agent_search`) VALUES ('rebuild');
--> statement-breakpoint
CREATE TRIGGER `agents_insert_indexes_search` AFTER INSERT ON `agents` BEGIN INSERT INTO `agent_search`(`rowid`, `name`, `bio`) VALUES (new.`rowid`, new.`name`, new.`bio`); END;
--> statement-breakpoint
CREATE TRIGGER `agents_delete_unindexes_search` AFTER DELETE ON `agents` BEGIN INSERT INTO `agent_search`(`agent_search`, `rowid`, `name`, `bio`) VALUES ('delete', old.`rowid`, old.`name`, old.`bio`); END;
--> statement-breakpoint
CREATE TRIGGER `agents_update_reindexes_search` AFTER UPDATE OF `name`, `bio` ON `agents` BEGIN INSERT INTO `agent_search`(`agent_search`, `rowid`, `name`, `bio`) VALUES ('delete', old.`rowid`, old.`name`, old.`bio`); INSERT INTO `agent_search`(`rowid`, `name`, `bio`) VALUES (new.`rowid`, new.`name`, new.`bio`); END;
