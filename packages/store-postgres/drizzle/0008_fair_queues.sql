ALTER TABLE "outbox" ADD COLUMN "tenant" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "endpoint" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "leased_until" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "recheck_leased_until" bigint;--> statement-breakpoint
ALTER TABLE "webhooks" ADD COLUMN "dropped_deliveries" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "outbox_pending_by_endpoint" ON "outbox" USING btree ("endpoint","next_attempt_at","id") WHERE "outbox"."sent_at" is null and "outbox"."failed_at" is null;--> statement-breakpoint
CREATE INDEX "outbox_in_flight" ON "outbox" USING btree ("leased_until") WHERE "outbox"."leased_until" is not null and "outbox"."sent_at" is null and "outbox"."failed_at" is null;--> statement-breakpoint
CREATE INDEX "tasks_rechecks_in_flight" ON "tasks" USING btree ("recheck_leased_until") WHERE "tasks"."recheck_leased_until" is not null and "tasks"."status" = 'pending_payment';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_pending_by_endpoint" ON "webhook_deliveries" USING btree ("webhook_id","next_attempt_at","id") WHERE "webhook_deliveries"."delivered_at" is null and "webhook_deliveries"."failed_at" is null;--> statement-breakpoint
-- Mail queued before the fair claim: its recipient and the recipient's domain (core mailQueueKeys).
UPDATE "outbox" SET "tenant" = lower(trim("to_address")), "endpoint" = lower(regexp_replace(trim("to_address"), '^.*@', '')) WHERE "tenant" = '';
