CREATE TABLE `rate_buckets` (
	`key` text PRIMARY KEY NOT NULL,
	`tat` real NOT NULL
);
