ALTER TABLE `agents` ADD `listing` text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE `agents` ADD `listing_message` text;--> statement-breakpoint
CREATE INDEX `agents_by_update` ON `agents` (`updated_at`,`name_key`);