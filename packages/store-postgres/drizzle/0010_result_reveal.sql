ALTER TABLE "skills" ADD COLUMN "reveal" text DEFAULT 'on_delivery' NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "reveal" text DEFAULT 'on_delivery' NOT NULL;