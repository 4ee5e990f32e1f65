ALTER TABLE `skills` ADD `reveal` text DEFAULT 'on_delivery' NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `reveal` text DEFAULT 'on_delivery' NOT NULL;