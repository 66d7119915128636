package control

import "github.com/better-compute/vps/lifecycle"

// Action names an audited mutation and the kind of object it targets.
type Action struct {
	Name   string
	Target string
}

// The audited actions.
var (
	ActCreateInstance        = Action{"instance.create", "instance"}
	ActStartInstance         = Action{"instance.start", "instance"}
	ActStopInstance          = Action{"instance.stop", "instance"}
	ActRebootInstance        = Action{"instance.reboot", "instance"}
	ActDeleteInstance        = Action{"instance.delete", "instance"}
	ActCreateTenant          = Action{"tenant.create", "tenant"}
	ActDeleteTenant          = Action{"tenant.delete", "tenant"}
	ActSetQuota              = Action{"quota.set", "tenant"}
	ActCreateAPIToken        = Action{"apiToken.create", "apiToken"}
	ActRevokeAPIToken        = Action{"apiToken.revoke", "apiToken"}
	ActBootstrapToken        = Action{"apiToken.bootstrap", "apiToken"}
	ActCreatePool            = Action{"pool.create", "pool"}
	ActCreateIPPool          = Action{"ipPool.create", "ipPool"}
	ActSetPoolSharedStore    = Action{"pool.setSharedSnapshotStore", "pool"}
	ActSetPoolCertified      = Action{"pool.setRequireCertifiedHosts", "pool"}
	ActCreateHost            = Action{"host.create", "host"}
	ActSetHostCapacity       = Action{"host.setCapacity", "host"}
	ActSetHostDraining       = Action{"host.setDraining", "host"}
	ActDeleteHost            = Action{"host.delete", "host"}
	ActClearGPUHealth        = Action{"host.clearGpuHealth", "host"}
	ActResetHostCredential   = Action{"host.resetCredential", "host"}
	ActCreateHostJoinToken   = Action{"host.createJoinToken", "host"}
	ActRevokeHostCerts       = Action{"host.revokeCertificates", "host"}
	ActCreateFlavor          = Action{"flavor.create", "flavor"}
	ActRegisterImage         = Action{"image.register", "image"}
	ActCreateProviderAccount = Action{"providerAccount.create", "providerAccount"}
	ActUpdateProviderAccount = Action{"providerAccount.update", "providerAccount"}
	ActDeleteProviderAccount = Action{"providerAccount.delete", "providerAccount"}
	ActReseal                = Action{"secrets.reseal", "secrets"}

	ActCreateProviderBootstrap = Action{"providerBootstrap.create", "providerBootstrap"}

	ActCreateSandboxTemplate = Action{"sandboxTemplate.create", "sandboxTemplate"}
	ActUpdateSandboxTemplate = Action{"sandboxTemplate.update", "sandboxTemplate"}
	ActDeleteSandboxTemplate = Action{"sandboxTemplate.delete", "sandboxTemplate"}
	ActCreateSandbox         = Action{"sandbox.create", "sandbox"}
	ActSetSandboxTimeout     = Action{"sandbox.setTimeout", "sandbox"}
	ActPauseSandbox          = Action{"sandbox.pause", "sandbox"}
	ActResumeSandbox         = Action{"sandbox.resume", "sandbox"}
	ActDeleteSandbox         = Action{"sandbox.delete", "sandbox"}

	ActCreateSandboxSnapshot = Action{"sandboxSnapshot.create", "sandboxSnapshot"}
	ActDeleteSandboxSnapshot = Action{"sandboxSnapshot.delete", "sandboxSnapshot"}
)

// DesiredStateActions are the actions that set an instance's desired state.
var DesiredStateActions = map[lifecycle.Desired]Action{
	lifecycle.WantRunning: ActStartInstance,
	lifecycle.WantStopped: ActStopInstance,
	lifecycle.WantDeleted: ActDeleteInstance,
}
