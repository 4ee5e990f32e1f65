ALTER TABLE "agents" ADD COLUMN "on_time_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "late_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "refunded_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "disputed_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "skills" ADD COLUMN "sla_seconds" integer;--> statement-breakpoint
ALTER TABLE "skills" ADD COLUMN "review_seconds" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "sla_seconds" integer;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "review_seconds" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "due_at" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "delivered_at" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "review_until" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "outcome" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "entries" text DEFAULT '[]' NOT NULL;--> statement-breakpoint
CREATE INDEX "tasks_due" ON "tasks" USING btree ("status","due_at") WHERE "tasks"."due_at" is not null;--> statement-breakpoint
CREATE INDEX "tasks_in_review" ON "tasks" USING btree ("status","review_until") WHERE "tasks"."review_until" is not null;