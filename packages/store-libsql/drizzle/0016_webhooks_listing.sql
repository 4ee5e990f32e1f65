CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`webhook_id` text NOT NULL,
	`event_id` text NOT NULL,
	`url` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`attempts` integer NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`delivered_at` integer,
	`failed_at` integer,
	`last_status` integer,
	`last_error` text,
	`last_latency_ms` integer,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_once` ON `webhook_deliveries` (`webhook_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`next_attempt_at`) WHERE "webhook_deliveries"."delivered_at" is null and "webhook_deliveries"."failed_at" is null;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_latest` ON `webhook_deliveries` (`webhook_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_key` text NOT NULL,
	`task_id` text,
	`after_event_id` text DEFAULT '0' NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhooks_by_owner` ON `webhooks` (`agent_key`,`task_id`);--> statement-breakpoint
ALTER TABLE `agents` ADD `listing` text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `listing_message` text;--> statement-breakpoint
CREATE INDEX `agents_by_update` ON `agents` (`updated_at`,`name_key`);--> statement-breakpoint
ALTER TABLE `events` ADD `task_id` text;