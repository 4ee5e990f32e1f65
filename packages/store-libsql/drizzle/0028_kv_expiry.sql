ALTER TABLE `kv` ADD `expires_at` integer;--> statement-breakpoint
CREATE INDEX `kv_by_expiry` ON `kv` (`expires_at`);
--> statement-breakpoint
-- The rows that were listed in hour buckets to be forgotten (`idem-due:{hour}:{shard}`, `kv-forget:{hour}`) carry
-- their own expiry from now on, and the buckets go: a sweep of expired rows replaces them. An Idempotency-Key entry
-- expires at its own forgetAt.
UPDATE `kv` SET `expires_at` = json_extract(`value`, '$.forgetAt')
  WHERE `key` LIKE 'idem:%' AND json_type(`value`, '$.forgetAt') = 'integer';
--> statement-breakpoint
-- A quota row once none of its hours may still hold a kept answer: 25 hours after its latest slot's hour.
UPDATE `kv` SET `expires_at` = (coalesce((SELECT max(json_extract(`slot`.`value`, '$[0]')) FROM json_each(`kv`.`value`, '$.slots') AS `slot`), 0) + 25) * 3600000
  WHERE `key` LIKE 'idem-quota:%';
--> statement-breakpoint
-- A row listed under `kv-forget:{hour}` once that hour has ended (the earliest, if it was listed twice).
UPDATE `kv` SET `expires_at` = (
    SELECT min((CAST(substr(`bucket`.`key`, 11) AS INTEGER) + 1) * 3600000)
    FROM `kv` AS `bucket`, json_each(`bucket`.`value`) AS `listed`
    WHERE `bucket`.`key` LIKE 'kv-forget:%' AND `bucket`.`key` <> 'kv-forget:swept-until'
      AND json_type(`bucket`.`value`) = 'array' AND `listed`.`value` = `kv`.`key`)
  WHERE `key` IN (
    SELECT `listed`.`value` FROM `kv` AS `bucket`, json_each(`bucket`.`value`) AS `listed`
    WHERE `bucket`.`key` LIKE 'kv-forget:%' AND `bucket`.`key` <> 'kv-forget:swept-until'
      AND json_type(`bucket`.`value`) = 'array');
--> statement-breakpoint
DELETE FROM `kv` WHERE `key` LIKE 'idem-due:%' OR `key` LIKE 'kv-forget:%';
