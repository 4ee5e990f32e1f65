CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"event_id" text NOT NULL,
	"url" text NOT NULL,
	"type" text NOT NULL,
	"payload" text NOT NULL,
	"created_at" bigint NOT NULL,
	"attempts" integer NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"delivered_at" bigint,
	"failed_at" bigint,
	"last_status" integer,
	"last_error" text,
	"last_latency_ms" integer
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"id" text PRIMARY KEY NOT NULL,
	"agent_key" text NOT NULL,
	"task_id" text,
	"after_event_id" text DEFAULT '0' NOT NULL,
	"url" text NOT NULL,
	"events" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "listing" text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "listing_message" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "task_id" text;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_webhook_id_webhooks_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_once" ON "webhook_deliveries" USING btree ("webhook_id","event_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."delivered_at" is null and "webhook_deliveries"."failed_at" is null;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_latest" ON "webhook_deliveries" USING btree ("webhook_id","created_at");--> statement-breakpoint
CREATE INDEX "webhooks_by_owner" ON "webhooks" USING btree ("agent_key","task_id");--> statement-breakpoint
CREATE INDEX "agents_by_update" ON "agents" USING btree ("updated_at","name_key");