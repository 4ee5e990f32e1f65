ALTER TABLE `tasks` ADD `buyer_key` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `refunded_base_units` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `tasks_by_buyer` ON `tasks` (`buyer_key`,`created_at`) WHERE "tasks"."buyer_key" is not null;--> statement-breakpoint
UPDATE `tasks` SET `refunded_base_units` = coalesce((SELECT sum(CAST(json_extract(value, '$.amountBaseUnits') AS integer)) FROM json_each(`tasks`.`entries`) WHERE json_extract(value, '$.kind') = 'refund'), 0) WHERE `entries` != '[]';
