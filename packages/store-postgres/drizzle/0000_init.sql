-- Keys and dates compare and sort byte by byte (COLLATE "C", hand-added), as in SQLite and the core, whatever the
-- database's default collation: the list orders and keyset pages must be the same on every store.
CREATE TABLE "agents" (
	"name_key" text COLLATE "C" PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"bio" text,
	"platform" text NOT NULL,
	"model" text,
	"wallet_address" text,
	"basename" text,
	"status" text NOT NULL,
	"api_key_hash" text NOT NULL,
	"pairing_code_hash" text NOT NULL,
	"pairing_code_used_at" bigint,
	"pairing_code_expires_at" bigint,
	"owner_username" text,
	"owner_key" text,
	"last_seen" bigint,
	"last_active_at" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"revision" integer NOT NULL,
	"verified_milestones" integer DEFAULT 0 NOT NULL,
	"claimed_milestones" integer DEFAULT 0 NOT NULL,
	"completed_tasks" integer DEFAULT 0 NOT NULL,
	"trust_credit_base_units" bigint DEFAULT 0 NOT NULL,
	"paying_buyers" integer DEFAULT 0 NOT NULL,
	"owner_proven" integer DEFAULT 0 NOT NULL,
	"skill_text" text DEFAULT '' NOT NULL,
	"cheapest_price_base_units" bigint,
	"sells_free" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "agents_api_key_hash_unique" UNIQUE("api_key_hash"),
	CONSTRAINT "agents_pairing_code_hash_unique" UNIQUE("pairing_code_hash")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"agent" text NOT NULL,
	"at" bigint NOT NULL,
	"summary" text NOT NULL,
	"data" text NOT NULL,
	"xid" bigint DEFAULT (pg_current_xact_id()::text)::bigint NOT NULL,
	"position" bigint,
	CONSTRAINT "events_position_unique" UNIQUE("position")
);
--> statement-breakpoint
CREATE TABLE "kv" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "milestones" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text COLLATE "C" NOT NULL,
	"agent_key" text COLLATE "C" NOT NULL,
	"date" text COLLATE "C" NOT NULL,
	"title" text NOT NULL,
	"description" text,
	"proof" text,
	"trust" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "order_mails" (
	"key" text PRIMARY KEY NOT NULL,
	"task_id" text,
	"reply_id" text NOT NULL,
	"received_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "outbox" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"from_address" text NOT NULL,
	"to_address" text NOT NULL,
	"subject" text NOT NULL,
	"body" text NOT NULL,
	"message_id" text NOT NULL,
	"in_reply_to" text,
	"references" text NOT NULL,
	"headers" text NOT NULL,
	"created_at" bigint NOT NULL,
	"attempts" integer NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"sent_at" bigint,
	"failed_at" bigint,
	"last_error" text
);
--> statement-breakpoint
CREATE TABLE "rate_buckets" (
	"key" text PRIMARY KEY NOT NULL,
	"tat" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "skills" (
	"agent_key" text COLLATE "C" NOT NULL,
	"position" integer NOT NULL,
	"slug" text COLLATE "C" NOT NULL,
	"name" text NOT NULL,
	"name_key" text COLLATE "C" DEFAULT '' NOT NULL,
	"description" text,
	"type" text NOT NULL,
	"price_base_units" bigint,
	"currency" text NOT NULL,
	"sla" text,
	"url" text,
	"input_schema" text,
	CONSTRAINT "skills_agent_key_slug_pk" PRIMARY KEY("agent_key","slug")
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"agent_key" text COLLATE "C" NOT NULL,
	"skill_name" text NOT NULL,
	"skill_slug" text NOT NULL,
	"sla" text NOT NULL,
	"status" text NOT NULL,
	"price_base_units" bigint NOT NULL,
	"pay_to" text,
	"params" text,
	"buyer" text,
	"buyer_email" text,
	"buyer_wallet" text,
	"payment_method" text,
	"tx_hash" text,
	"escrow_task_id" text,
	"paid_amount_base_units" text,
	"paid_from" text,
	"paid_at" bigint,
	"pending_tx_hash" text,
	"recheck_attempts" integer,
	"next_recheck_at" bigint,
	"pending_signature" text,
	"client_key" text,
	"expires_at" bigint,
	"result_url" text,
	"idempotency_key" text,
	"request_fingerprint" text,
	"first_status" integer,
	"first_body" text,
	"created_at" bigint NOT NULL,
	"completed_at" bigint,
	CONSTRAINT "tasks_tx_hash_unique" UNIQUE("tx_hash")
);
--> statement-breakpoint
CREATE TABLE "trust_buyers" (
	"agent_key" text COLLATE "C" NOT NULL,
	"wallet" text COLLATE "C" NOT NULL,
	"paid_base_units" bigint NOT NULL,
	CONSTRAINT "trust_buyers_agent_key_wallet_pk" PRIMARY KEY("agent_key","wallet")
);
--> statement-breakpoint
CREATE TABLE "users" (
	"name_key" text COLLATE "C" PRIMARY KEY NOT NULL,
	"username" text NOT NULL,
	"wallet_address" text NOT NULL,
	"bio" text,
	"showcase" text NOT NULL,
	"invite_code" text NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "users_invite_code_unique" UNIQUE("invite_code")
);
--> statement-breakpoint
ALTER TABLE "milestones" ADD CONSTRAINT "milestones_agent_key_agents_name_key_fk" FOREIGN KEY ("agent_key") REFERENCES "public"."agents"("name_key") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "skills" ADD CONSTRAINT "skills_agent_key_agents_name_key_fk" FOREIGN KEY ("agent_key") REFERENCES "public"."agents"("name_key") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_agent_key_agents_name_key_fk" FOREIGN KEY ("agent_key") REFERENCES "public"."agents"("name_key") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trust_buyers" ADD CONSTRAINT "trust_buyers_agent_key_agents_name_key_fk" FOREIGN KEY ("agent_key") REFERENCES "public"."agents"("name_key") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agents_by_activity" ON "agents" USING btree ("last_active_at" desc,"name_key");--> statement-breakpoint
CREATE INDEX "agents_by_owner" ON "agents" USING btree ("owner_key");--> statement-breakpoint
CREATE INDEX "agents_by_age" ON "agents" USING btree ("created_at" desc,"name_key");--> statement-breakpoint
CREATE INDEX "agents_by_price" ON "agents" USING btree (("cheapest_price_base_units" is null),"cheapest_price_base_units","last_active_at" desc,"name_key");--> statement-breakpoint
CREATE INDEX "agents_by_last_seen" ON "agents" USING btree ("last_seen");--> statement-breakpoint
CREATE INDEX "events_unpositioned" ON "events" USING btree ("seq") WHERE "events"."position" is null;--> statement-breakpoint
CREATE INDEX "milestones_by_agent_date" ON "milestones" USING btree ("agent_key","date" desc,"seq" desc);--> statement-breakpoint
CREATE INDEX "outbox_due" ON "outbox" USING btree ("next_attempt_at") WHERE "outbox"."sent_at" is null and "outbox"."failed_at" is null;--> statement-breakpoint
CREATE INDEX "skills_by_slug" ON "skills" USING btree ("slug");--> statement-breakpoint
CREATE INDEX "skills_by_name" ON "skills" USING btree ("name_key");--> statement-breakpoint
CREATE INDEX "skills_paid" ON "skills" USING btree ("agent_key","slug") WHERE "skills"."type" = 'purchasable';--> statement-breakpoint
CREATE INDEX "tasks_by_agent" ON "tasks" USING btree ("agent_key","status","created_at" desc);--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_idempotency_by_client" ON "tasks" USING btree ("agent_key","client_key","idempotency_key");--> statement-breakpoint
CREATE INDEX "tasks_due_rechecks" ON "tasks" USING btree ("next_recheck_at");--> statement-breakpoint
CREATE UNIQUE INDEX "tasks_escrow_deposit" ON "tasks" USING btree ("paid_from","escrow_task_id");--> statement-breakpoint
CREATE INDEX "tasks_expiring" ON "tasks" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "tasks_checks_by_client" ON "tasks" USING btree ("client_key") WHERE "tasks"."pending_tx_hash" is not null;--> statement-breakpoint
CREATE INDEX "users_by_age" ON "users" USING btree ("created_at" desc,"name_key");