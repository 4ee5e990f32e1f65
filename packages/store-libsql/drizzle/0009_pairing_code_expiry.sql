ALTER TABLE `agents` ADD `pairing_code_expires_at` integer;--> statement-breakpoint
UPDATE `agents` SET `pairing_code_expires_at` = cast(unixepoch('now') AS integer) * 1000 + 604800000 WHERE `pairing_code_used_at` IS NULL;
