-- Search: an agent matches q when its name, bio or skill text holds q as a literal substring, ASCII letters compared
-- without case (as the core's matchesFilters and store-libsql's search). agent_search_text is that text, folded, with
-- U+001F (which q cannot hold) between the columns so no match spans two; a pg_trgm index on it answers
-- `like '%q%'` for any q of three characters or more, and PostgreSQL rechecks every candidate, so results are exact.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE FUNCTION agent_search_text(name text, bio text, skill_text text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN translate(name || chr(31) || coalesce(bio, '') || chr(31) || skill_text,
    'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
--> statement-breakpoint
CREATE INDEX agents_search ON agents USING gin (agent_search_text(name, bio, skill_text) gin_trgm_ops);
--> statement-breakpoint
-- Changes: every statement that changes what public reads show (agents, skills, milestones, users) notifies
-- `agentmarket_change` after its transaction commits (PostgreSQL sends one notice per channel and payload per
-- transaction), naming the writer's application_name (each node's own: it has counted its own writes already). Each
-- node LISTENs and moves its read caches' version on each notice: no shared counter row, which every writer of every
-- node would otherwise queue on. (Feed events are announced by the feed sequencer once they have a position.)
CREATE FUNCTION notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('agentmarket_change', current_setting('application_name'));
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER agents_notify_change AFTER INSERT OR UPDATE OR DELETE ON agents FOR EACH STATEMENT EXECUTE FUNCTION notify_change();
--> statement-breakpoint
CREATE TRIGGER skills_notify_change AFTER INSERT OR UPDATE OR DELETE ON skills FOR EACH STATEMENT EXECUTE FUNCTION notify_change();
--> statement-breakpoint
CREATE TRIGGER milestones_notify_change AFTER INSERT OR UPDATE OR DELETE ON milestones FOR EACH STATEMENT EXECUTE FUNCTION notify_change();
--> statement-breakpoint
CREATE TRIGGER users_notify_change AFTER INSERT OR UPDATE OR DELETE ON users FOR EACH STATEMENT EXECUTE FUNCTION notify_change();
