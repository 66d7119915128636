-- name: CreateFlavor :one
INSERT INTO flavors (id, name, vcpus, memory_mb, disk_gb, gpu_model, gpu_count, provider_types)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *;

-- name: GetFlavor :one
SELECT * FROM flavors WHERE id = $1;

-- name: ListFlavors :many
SELECT * FROM flavors ORDER BY vcpus, memory_mb, name;

-- name: GetFlavorsByIDs :many
SELECT * FROM flavors WHERE id = ANY(@ids::uuid[]);
