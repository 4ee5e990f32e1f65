ALTER TABLE `agents` ADD `reliability_votes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `reliability_weight` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `trust_buyers` ADD `on_time_jobs` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `trust_buyers` ADD `late_jobs` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Data move: each judged job on the row of the wallet that paid it (as Store.changeTask now counts it): a task paid on
-- chain (transfer, escrow, x402, job escrow; more than 0) by a wallet other than the one it paid, the zero address and
-- the owner's proven wallet is on time once delivered, late once its outcome is `late`. A wallet without a row of
-- credit is a newcomer; one with one keeps its standing.
INSERT INTO `trust_buyers` (`agent_key`, `wallet`, `paid_base_units`, `on_time_jobs`, `late_jobs`)
SELECT t.`agent_key`, lower(t.`paid_from`), 0, sum(t.`delivered_at` IS NOT NULL), sum(t.`outcome` = 'late')
FROM `tasks` t JOIN `agents` a ON a.`name_key` = t.`agent_key` LEFT JOIN `users` u ON u.`name_key` = a.`owner_key`
WHERE t.`payment_method` IN ('transfer', 'escrow', 'x402', 'job_escrow') AND t.`paid_from` IS NOT NULL
  AND cast(t.`paid_amount_base_units` AS integer) > 0
  AND (t.`delivered_at` IS NOT NULL OR t.`outcome` = 'late')
  AND lower(t.`paid_from`) NOT IN (lower(coalesce(t.`pay_to`, '')), '0x0000000000000000000000000000000000000000',
    lower(coalesce(CASE WHEN a.`owner_proven` = 1 THEN u.`wallet_address` END, '')))
GROUP BY t.`agent_key`, lower(t.`paid_from`)
ON CONFLICT (`agent_key`, `wallet`) DO UPDATE SET `on_time_jobs` = excluded.`on_time_jobs`,
  `late_jobs` = excluded.`late_jobs`;
--> statement-breakpoint
-- Then each agent's on-time votes (Trust.ts trustTotals): one per established wallet with judged jobs, one for all
-- the others together.
UPDATE `agents` SET
  `reliability_votes` = (SELECT coalesce(sum(1000 * b.`on_time_jobs` / (b.`on_time_jobs` + b.`late_jobs`)), 0)
      FROM `trust_buyers` b WHERE b.`agent_key` = `agents`.`name_key` AND b.`established` = 1
        AND b.`on_time_jobs` + b.`late_jobs` > 0)
    + (SELECT coalesce(1000 * sum(b.`on_time_jobs`) / sum(b.`on_time_jobs` + b.`late_jobs`), 0)
      FROM `trust_buyers` b WHERE b.`agent_key` = `agents`.`name_key` AND b.`established` = 0
        AND b.`on_time_jobs` + b.`late_jobs` > 0),
  `reliability_weight` = 1000 * ((SELECT count(*) FROM `trust_buyers` b WHERE b.`agent_key` = `agents`.`name_key`
        AND b.`established` = 1 AND b.`on_time_jobs` + b.`late_jobs` > 0)
    + (SELECT count(*) > 0 FROM `trust_buyers` b WHERE b.`agent_key` = `agents`.`name_key` AND b.`established` = 0
        AND b.`on_time_jobs` + b.`late_jobs` > 0))
WHERE `on_time_tasks` + `late_tasks` > 0;
