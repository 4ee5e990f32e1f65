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
ALTER TABLE `agents` ADD `owner_proven` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE `tasks` SET `expires_at` = `created_at` + 86400000 WHERE `status` = 'pending_payment' AND `expires_at` IS NULL;--> statement-breakpoint
INSERT INTO `trust_buyers` (`agent_key`, `wallet`, `paid_base_units`)
SELECT t.`agent_key`, lower(t.`paid_from`), min(10000000, sum(min(10000000, cast(t.`paid_amount_base_units` AS integer))))
FROM `tasks` t JOIN `agents` a ON a.`name_key` = t.`agent_key` LEFT JOIN `users` u ON u.`name_key` = a.`owner_key`
WHERE t.`status` = 'completed' AND t.`payment_method` IN ('transfer', 'escrow') AND t.`paid_from` IS NOT NULL
  AND cast(t.`paid_amount_base_units` AS integer) > 0
  AND lower(t.`paid_from`) NOT IN (lower(coalesce(t.`pay_to`, '')), lower(coalesce(a.`wallet_address`, '')), lower(coalesce(u.`wallet_address`, '')), '0x0000000000000000000000000000000000000000')
GROUP BY t.`agent_key`, lower(t.`paid_from`);--> statement-breakpoint
UPDATE `agents` SET
  `trust_credit_base_units` = (SELECT coalesce(sum(`paid_base_units`), 0) FROM `trust_buyers` WHERE `trust_buyers`.`agent_key` = `agents`.`name_key`),
  `paying_buyers` = (SELECT count(*) FROM `trust_buyers` WHERE `trust_buyers`.`agent_key` = `agents`.`name_key`);
