ALTER TABLE "kv" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
CREATE INDEX "kv_by_expiry" ON "kv" USING btree ("expires_at");
--> statement-breakpoint
-- The rows that were listed in hour buckets to be forgotten (`idem-due:{hour}:{shard}`, `kv-forget:{hour}`) carry
-- their own expiry from now on, and the buckets go: a sweep of expired rows replaces them. An Idempotency-Key entry
-- expires at its own forgetAt.
UPDATE "kv" SET "expires_at" = ("value"::jsonb ->> 'forgetAt')::bigint
  WHERE "key" LIKE 'idem:%' AND jsonb_typeof("value"::jsonb -> 'forgetAt') = 'number';
--> statement-breakpoint
-- A quota row once none of its hours may still hold a kept answer: 25 hours after its latest slot's hour.
UPDATE "kv" SET "expires_at" = (coalesce((
    SELECT max(("slot" ->> 0)::bigint)
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof("kv"."value"::jsonb -> 'slots') = 'array' THEN "kv"."value"::jsonb -> 'slots' ELSE '[]'::jsonb END) AS "slot"
  ), 0) + 25) * 3600000
  WHERE "key" LIKE 'idem-quota:%';
--> statement-breakpoint
-- A row listed under `kv-forget:{hour}` once that hour has ended (the earliest, if it was listed twice).
UPDATE "kv" SET "expires_at" = "due"."at"
  FROM (
    SELECT "listed" AS "key", min((substr("bucket"."key", 11)::bigint + 1) * 3600000) AS "at"
    FROM "kv" AS "bucket",
      jsonb_array_elements_text(CASE WHEN jsonb_typeof("bucket"."value"::jsonb) = 'array' THEN "bucket"."value"::jsonb ELSE '[]'::jsonb END) AS "listed"
    WHERE "bucket"."key" LIKE 'kv-forget:%' AND "bucket"."key" <> 'kv-forget:swept-until'
    GROUP BY "listed"
  ) AS "due"
  WHERE "kv"."key" = "due"."key";
--> statement-breakpoint
DELETE FROM "kv" WHERE "key" LIKE 'idem-due:%' OR "key" LIKE 'kv-forget:%';
