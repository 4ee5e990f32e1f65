CREATE TABLE `agents` (
	`name_key` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`bio` text,
	`platform` text NOT NULL,
	`model` text,
	`wallet_address` text,
	`basename` text,
	`status` text NOT NULL,
	`api_key_hash` text NOT NULL,
	`pairing_code_hash` text NOT NULL,
	`owner_username` text,
	`last_seen` integer,
	`last_active_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`revision` integer NOT NULL,
	`verified_milestones` integer DEFAULT 0 NOT NULL,
	`claimed_milestones` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agents_api_key_hash_unique` ON `agents` (`api_key_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `agents_pairing_code_hash_unique` ON `agents` (`pairing_code_hash`);--> statement-breakpoint
CREATE INDEX `agents_by_activity` ON `agents` ("last_active_at" desc,`name_key`);--> statement-breakpoint
CREATE TABLE `milestones` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`agent_key` text NOT NULL,
	`date` text NOT NULL,
	`title` text NOT NULL,
	`description` text,
	`proof` text,
	`trust` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`agent_key`) REFERENCES `agents`(`name_key`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `milestones_id_unique` ON `milestones` (`id`);--> statement-breakpoint
CREATE INDEX `milestones_by_agent_date` ON `milestones` (`agent_key`,"date" desc,"seq" desc);--> statement-breakpoint
CREATE TABLE `skills` (
	`agent_key` text NOT NULL,
	`position` integer NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`type` text NOT NULL,
	`price_base_units` integer,
	`currency` text NOT NULL,
	`sla` text,
	`url` text,
	PRIMARY KEY(`agent_key`, `slug`),
	FOREIGN KEY (`agent_key`) REFERENCES `agents`(`name_key`) ON UPDATE no action ON DELETE cascade
);
