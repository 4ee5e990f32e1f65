ALTER TABLE "agents" ADD COLUMN "on_time_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "late_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "refunded_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "disputed_tasks" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "rating_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "rating_sum" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "rated_buyers" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "rating_votes" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "skills" ADD COLUMN "sla_seconds" integer;--> statement-breakpoint
ALTER TABLE "skills" ADD COLUMN "review_seconds" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "sla_seconds" integer;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "review_seconds" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "due_at" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "delivered_at" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "review_until" bigint;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "outcome" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "entries" text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "job_id" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "escrow_job" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "rating" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "rated_at" bigint;--> statement-breakpoint
ALTER TABLE "trust_buyers" ADD COLUMN "rating_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "trust_buyers" ADD COLUMN "rating_sum" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "tasks_due" ON "tasks" USING btree ("status","due_at") WHERE "tasks"."due_at" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_by_job_id" ON "tasks" USING btree ("job_id") WHERE "tasks"."job_id" is not null;--> statement-breakpoint
CREATE INDEX "tasks_by_escrow_key" ON "tasks" USING btree ("escrow_task_id") WHERE "tasks"."escrow_job" is not null;--> statement-breakpoint
CREATE INDEX "tasks_ratings" ON "tasks" USING btree ("agent_key","rated_at") WHERE "tasks"."rated_at" is not null;--> statement-breakpoint
CREATE INDEX "tasks_in_review" ON "tasks" USING btree ("status","review_until") WHERE "tasks"."review_until" is not null;