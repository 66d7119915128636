// Package domain holds the control plane's objects as the API shows them and
// events carry them: tenants, principals, pools, hosts, flavors, images,
// provider accounts, audit events, instances, sandbox templates and
// sandboxes, with the few values that hang off them (quotas, capacities,
// IP ranges, API tokens, network policies).
//
// Each is mapped from its database row here and nowhere else, by one
// XFromRow function per row type, so a column added, renamed or retyped in
// the database stops at this package: package control returns these types,
// the GraphQL schema binds them, and events are built from them. They carry
// what callers may see and nothing more; secrets (credential hashes, sealed
// credentials, user data) and the reconcilers' bookkeeping stay in the rows.
package domain
