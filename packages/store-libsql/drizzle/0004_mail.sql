CREATE TABLE `order_mails` (
	`key` text PRIMARY KEY NOT NULL,
	`task_id` text,
	`reply_id` text NOT NULL,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`from_address` text NOT NULL,
	`to_address` text NOT NULL,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`message_id` text NOT NULL,
	`in_reply_to` text,
	`references` text NOT NULL,
	`headers` text NOT NULL,
	`created_at` integer NOT NULL,
	`attempts` integer NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`sent_at` integer,
	`failed_at` integer,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `outbox_due` ON `outbox` (`next_attempt_at`) WHERE "outbox"."sent_at" is null and "outbox"."failed_at" is null;--> statement-breakpoint
ALTER TABLE `skills` ADD `name_key` text DEFAULT '' NOT NULL;--> statement-breakpoint
-- Skills stored before this migration: SQLite's lower() covers ASCII names; later writes set the Unicode form.
UPDATE `skills` SET `name_key` = lower(`name`);--> statement-breakpoint
CREATE INDEX `skills_by_slug` ON `skills` (`slug`);--> statement-breakpoint
CREATE INDEX `skills_by_name` ON `skills` (`name_key`);