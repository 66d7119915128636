-- A hosted pool names the runtime its hosts run (libvirt-kvm, fake); a
-- host records the runtime its daemon last said it runs (NULL before a
-- daemon of protocol 3 that names it connected). The gateway refuses a
-- host whose runtime is not its pool's. Pools of other classes have none.

-- +goose Up
ALTER TABLE pools ADD COLUMN runtime text;
UPDATE pools SET runtime = 'libvirt-kvm' WHERE class = 'vps-host';
ALTER TABLE pools ADD CONSTRAINT pools_runtime_hosted CHECK ((class = 'vps-host') = (runtime IS NOT NULL));
ALTER TABLE hosts ADD COLUMN runtime text;

-- +goose Down
ALTER TABLE hosts DROP COLUMN runtime;
ALTER TABLE pools DROP COLUMN runtime;
