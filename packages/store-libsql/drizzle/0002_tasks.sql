CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_key` text NOT NULL,
	`skill_name` text NOT NULL,
	`skill_slug` text NOT NULL,
	`sla` text NOT NULL,
	`status` text NOT NULL,
	`price_base_units` integer NOT NULL,
	`pay_to` text,
	`params` text,
	`buyer` text,
	`buyer_email` text,
	`buyer_wallet` text,
	`payment_method` text,
	`tx_hash` text,
	`escrow_task_id` text,
	`paid_amount_base_units` text,
	`paid_from` text,
	`paid_at` integer,
	`pending_tx_hash` text,
	`recheck_attempts` integer,
	`next_recheck_at` integer,
	`result_url` text,
	`idempotency_key` text,
	`request_fingerprint` text,
	`first_status` integer,
	`first_body` text,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	FOREIGN KEY (`agent_key`) REFERENCES `agents`(`name_key`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_tx_hash_unique` ON `tasks` (`tx_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_escrow_task_id_unique` ON `tasks` (`escrow_task_id`);--> statement-breakpoint
CREATE INDEX `tasks_by_agent` ON `tasks` (`agent_key`,`status`,"created_at" desc);--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_idempotency` ON `tasks` (`agent_key`,`idempotency_key`);--> statement-breakpoint
CREATE INDEX `tasks_due_rechecks` ON `tasks` (`next_recheck_at`);--> statement-breakpoint
ALTER TABLE `agents` ADD `completed_tasks` integer DEFAULT 0 NOT NULL;