ALTER TABLE "agents" ADD COLUMN "rating_weight" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "established_credit_base_units" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "established_buyers" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "trust_buyers" ADD COLUMN "established" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "trust_buyers" ADD COLUMN "first_paid_at" bigint;--> statement-breakpoint
CREATE INDEX "trust_buyers_by_wallet" ON "trust_buyers" USING btree ("wallet");;--> statement-breakpoint
-- Data move: credit kept before buyers' standing was judged stays established (it was credited under the rule of its
-- time; nothing recorded says which of those wallets were fresh), and each row's first credit is its earliest paid task.
UPDATE "trust_buyers" SET "established" = 1,
  "first_paid_at" = coalesce((SELECT min(t."paid_at") FROM "tasks" t WHERE t."agent_key" = "trust_buyers"."agent_key"
    AND lower(t."paid_from") = "trust_buyers"."wallet" AND t."status" = 'completed'), 0)
WHERE "paid_base_units" > 0;
--> statement-breakpoint
-- Votes now weigh what their wallet paid (Trust.ts voteWeight: thousandths of 10 USDC, at most 1000).
UPDATE "agents" SET
  "established_credit_base_units" = "trust_credit_base_units",
  "established_buyers" = "paying_buyers",
  "rating_weight" = (SELECT coalesce(sum(least(1000, b."paid_base_units" / 10000)), 0) FROM "trust_buyers" b
    WHERE b."agent_key" = "agents"."name_key" AND b."rating_count" > 0),
  "rating_votes" = (SELECT coalesce(sum(((2000 * (b."rating_sum" - b."rating_count") + 4 * b."rating_count") / (8 * b."rating_count"))
      * least(1000, b."paid_base_units" / 10000) / 1000), 0) FROM "trust_buyers" b
    WHERE b."agent_key" = "agents"."name_key" AND b."rating_count" > 0);
