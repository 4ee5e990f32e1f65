CREATE TABLE `events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`agent` text NOT NULL,
	`at` integer NOT NULL,
	`summary` text NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `users` (
	`name_key` text PRIMARY KEY NOT NULL,
	`username` text NOT NULL,
	`wallet_address` text NOT NULL,
	`bio` text,
	`showcase` text NOT NULL,
	`invite_code` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_invite_code_unique` ON `users` (`invite_code`);--> statement-breakpoint
CREATE INDEX `users_by_age` ON `users` ("created_at" desc,`name_key`);--> statement-breakpoint
ALTER TABLE `agents` ADD `pairing_code_used_at` integer;--> statement-breakpoint
ALTER TABLE `agents` ADD `owner_key` text;--> statement-breakpoint
CREATE INDEX `agents_by_owner` ON `agents` (`owner_key`);