ALTER TABLE `agents` ADD `on_time_tasks` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `late_tasks` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `refunded_tasks` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `disputed_tasks` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `rating_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `rating_sum` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `rated_buyers` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `rating_votes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `skills` ADD `sla_seconds` integer;--> statement-breakpoint
ALTER TABLE `skills` ADD `review_seconds` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `sla_seconds` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `review_seconds` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `due_at` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `delivered_at` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `review_until` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `outcome` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `entries` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `job_id` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `escrow_job` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `rating` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `rated_at` integer;--> statement-breakpoint
CREATE INDEX `tasks_due` ON `tasks` (`status`,`due_at`) WHERE "tasks"."due_at" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_by_job_id` ON `tasks` (`job_id`) WHERE "tasks"."job_id" is not null;--> statement-breakpoint
CREATE INDEX `tasks_by_escrow_key` ON `tasks` (`escrow_task_id`) WHERE "tasks"."escrow_job" is not null;--> statement-breakpoint
CREATE INDEX `tasks_ratings` ON `tasks` (`agent_key`,`rated_at`) WHERE "tasks"."rated_at" is not null;--> statement-breakpoint
CREATE INDEX `tasks_in_review` ON `tasks` (`status`,`review_until`) WHERE "tasks"."review_until" is not null;--> statement-breakpoint
ALTER TABLE `trust_buyers` ADD `rating_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `trust_buyers` ADD `rating_sum` integer DEFAULT 0 NOT NULL;