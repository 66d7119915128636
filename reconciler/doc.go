// Package reconciler will hold the work stream consumer, the outbox relay
// and the vps.instances reconciler (issue 3). Until then the API's outbox
// rows wait in Postgres; nothing is lost, since the relay reads them from
// there.
package reconciler
