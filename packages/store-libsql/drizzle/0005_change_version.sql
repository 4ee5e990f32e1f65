-- One counter that every change to what public reads show moves, whoever writes (any process, any path):
-- read caches are keyed by it (Store.changeVersion).
CREATE TABLE `change_version` (
	`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1),
	`version` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `change_version` (`id`, `version`) VALUES (1, 0);
--> statement-breakpoint
CREATE TRIGGER `agents_insert_moves_version` AFTER INSERT ON `agents` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `agents_update_moves_version` AFTER UPDATE ON `agents` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `agents_delete_moves_version` AFTER DELETE ON `agents` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `skills_insert_moves_version` AFTER INSERT ON `skills` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `skills_update_moves_version` AFTER UPDATE ON `skills` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `skills_delete_moves_version` AFTER DELETE ON `skills` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `milestones_insert_moves_version` AFTER INSERT ON `milestones` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `milestones_update_moves_version` AFTER UPDATE ON `milestones` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `milestones_delete_moves_version` AFTER DELETE ON `milestones` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `users_insert_moves_version` AFTER INSERT ON `users` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `users_update_moves_version` AFTER UPDATE ON `users` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `users_delete_moves_version` AFTER DELETE ON `users` BEGIN UPDATE `change_version` SET `version` = `version` + 1 WHERE `id` = 1; END;
