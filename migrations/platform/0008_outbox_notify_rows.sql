-- The outbox's notification carries its row, so that the relay leading
-- (reconciler/relay.go) publishes an event as soon as its transaction
-- commits, without reading the outbox first. A row whose notification
-- would pass Postgres's limit (8000 bytes) sends its id only; the relay
-- fetches it.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    msg text := json_build_object('id', NEW.id, 'topic', NEW.topic, 'key', NEW.key,
                                  'channel', NEW.channel, 'payload', NEW.payload)::text;
BEGIN
    IF octet_length(msg) >= 8000 THEN
        msg := json_build_object('id', NEW.id)::text;
    END IF;
    PERFORM pg_notify('outbox', msg);
    RETURN NULL;
END $$;
-- +goose StatementEnd
DROP TRIGGER outbox_notify ON outbox;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION outbox_notify();

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox', '');
    RETURN NULL;
END $$;
-- +goose StatementEnd
DROP TRIGGER outbox_notify ON outbox;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
