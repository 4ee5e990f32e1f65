ALTER TABLE "tasks" ADD COLUMN "buyer_key" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "refunded_base_units" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "tasks_by_buyer" ON "tasks" USING btree ("buyer_key","created_at") WHERE "tasks"."buyer_key" is not null;--> statement-breakpoint
UPDATE "tasks" SET "refunded_base_units" = (SELECT coalesce(sum((e->>'amountBaseUnits')::bigint), 0) FROM jsonb_array_elements("tasks"."entries"::jsonb) e WHERE e->>'kind' = 'refund') WHERE "entries" != '[]';
