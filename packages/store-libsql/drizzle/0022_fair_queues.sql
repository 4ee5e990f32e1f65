ALTER TABLE `outbox` ADD `tenant` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `outbox` ADD `endpoint` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `outbox` ADD `leased_until` integer;--> statement-breakpoint
CREATE INDEX `outbox_pending_by_endpoint` ON `outbox` (`endpoint`,`next_attempt_at`,`id`) WHERE "outbox"."sent_at" is null and "outbox"."failed_at" is null;--> statement-breakpoint
CREATE INDEX `outbox_in_flight` ON `outbox` (`leased_until`) WHERE "outbox"."leased_until" is not null and "outbox"."sent_at" is null and "outbox"."failed_at" is null;--> statement-breakpoint
ALTER TABLE `tasks` ADD `recheck_leased_until` integer;--> statement-breakpoint
CREATE INDEX `tasks_rechecks_in_flight` ON `tasks` (`recheck_leased_until`) WHERE "tasks"."recheck_leased_until" is not null and "tasks"."status" = 'pending_payment';--> statement-breakpoint
ALTER TABLE `webhooks` ADD `dropped_deliveries` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_pending_by_endpoint` ON `webhook_deliveries` (`webhook_id`,`next_attempt_at`,`id`) WHERE "webhook_deliveries"."delivered_at" is null and "webhook_deliveries"."failed_at" is null;--> statement-breakpoint
-- Mail queued before the fair claim: its recipient and the recipient's domain (core mailQueueKeys).
UPDATE `outbox` SET `tenant` = lower(trim(`to_address`)), `endpoint` = lower(replace(substr(trim(`to_address`), instr(trim(`to_address`), '@') + 1), '@', '')) WHERE `tenant` = '';
