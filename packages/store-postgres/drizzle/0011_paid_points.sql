ALTER TABLE "agents" ADD COLUMN "paid_points" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Data move: each agent's paid points from its credit counters (Trust.ts countedPaidTrust), as every credited payment
-- now writes them: the steps of the paid curve (Trust.ts PAID_TRUST_STEPS, base units) at or below the counted credit
-- (established buyers' credit, plus the other wallets' together up to 10 USDC), at most 10 per counted buyer (the
-- established ones, plus one for all the others).
WITH "steps" ("credit") AS (VALUES
  (206839), (625019), (1049349), (1480012), (1917201), (2361116), (2811967), (3269975), (3735371), (4208396),
  (4689306), (5178366), (5675860), (6182082), (6697344), (7221974), (7756321), (8300750), (8855650), (9421431),
  (9998528), (10587404), (11188549), (11802485), (12429768), (13070992), (13726791), (14397842), (15084872), (15788661),
  (16510046), (17249930), (18009287), (18789170), (19590718), (20415172), (21263877), (22138305), (23040062), (23970914),
  (24932800), (25927861), (26958467), (28027252), (29137154), (30291464), (31493884), (32748599), (34060366), (35434621),
  (36877616), (38396594), (40000000), (41697778), (43501735), (45426041), (47487911), (49708537), (52114422), (54739312),
  (57627111), (60836404), (64447849), (68576866), (73397028), (79187161), (86438562), (96147099), (110886411), (142585661))
UPDATE "agents" SET "paid_points" = least(
  10 * ("established_buyers" + ("trust_credit_base_units" > "established_credit_base_units")::int),
  (SELECT count(*) FROM "steps" WHERE "steps"."credit" <= "established_credit_base_units"
    + least(10000000, "trust_credit_base_units" - "established_credit_base_units")))
WHERE "trust_credit_base_units" > 0;
