ALTER TABLE "webhook_deliveries" ADD COLUMN "tenant" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "leased_until" bigint;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_in_flight" ON "webhook_deliveries" USING btree ("leased_until") WHERE "webhook_deliveries"."leased_until" is not null and "webhook_deliveries"."delivered_at" is null and "webhook_deliveries"."failed_at" is null;--> statement-breakpoint
-- Deliveries queued before the fair claim: the seller's, or the task's for a buyer's endpoint (core webhookTenant).
UPDATE "webhook_deliveries" SET "tenant" = (SELECT CASE WHEN "webhooks"."task_id" IS NULL THEN 'seller:' || "webhooks"."agent_key" ELSE 'task:' || "webhooks"."task_id" END FROM "webhooks" WHERE "webhooks"."id" = "webhook_deliveries"."webhook_id") WHERE "tenant" = '';
