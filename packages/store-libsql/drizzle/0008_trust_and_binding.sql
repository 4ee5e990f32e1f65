CREATE TABLE `trust_buyers` (
	`agent_key` text NOT NULL,
	`wallet` text NOT NULL,
	`paid_base_units` integer NOT NULL,
	PRIMARY KEY(`agent_key`, `wallet`),
	FOREIGN KEY (`agent_key`) REFERENCES `agents`(`name_key`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
DROP INDEX `tasks_escrow_task_id_unique`;--> statement-breakpoint
DROP INDEX `tasks_idempotency`;--> statement-breakpoint
ALTER TABLE `tasks` ADD `pending_signature` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `client_key` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `expires_at` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_idempotency_by_client` ON `tasks` (`agent_key`,`client_key`,`idempotency_key`);--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_escrow_deposit` ON `tasks` (`paid_from`,`escrow_task_id`);--> statement-breakpoint
CREATE INDEX `tasks_expiring` ON `tasks` (`status`,`expires_at`);--> statement-breakpoint
CREATE INDEX `tasks_checks_by_client` ON `tasks` (`client_key`) WHERE "tasks"."pending_tx_hash" is not null;--> statement-breakpoint
ALTER TABLE `agents` ADD `trust_credit_base_units` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `paying_buyers` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `owner_proven` integer DEFAULT 0 NOT NULL;