ALTER TABLE "agents" ADD COLUMN "listing" text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "listing_message" text;--> statement-breakpoint
CREATE INDEX "agents_by_update" ON "agents" USING btree ("updated_at","name_key");