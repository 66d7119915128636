// Operator pages of who and what may reach the API and the clouds: API
// tokens and provider accounts.
import { h, replace, time, plural } from '../dom.js';
import { gql, describe } from '../api.js';
import { empty, table, tag, confirm, showOnce } from '../ui.js';
import { listPage, choices } from './ops.js';
import { adminForm, optional, FieldError } from './admin.js';

export function tokensPage(ctx) {
  listPage(ctx, {
    title: 'API tokens', what: 'API tokens', id: 'tokens-body',
    query: `query Tokens { apiTokensConnection(first: 100, orderBy: NEWEST_FIRST) { totalCount nodes { id name role tenant { name } createdAt expiresAt revokedAt } }
      tenants { id name } }`,
    tools: (reload, { tenants }) => adminForm({
      prefix: 'new-token', what: 'token', label: 'New token', submit: 'Create token',
      specs: [
        { key: 'name', label: 'Name', required: true, hint: 'What it is for, such as acme-ci.' },
        { key: 'tenantId', label: 'Tenant', type: 'select', options: choices(tenants, 'none: an operator token'),
          hint: 'A tenant’s token is a member of it; a token of no tenant is an operator.' },
      ],
      run: (v) => gql(`mutation NewToken($in: CreateApiTokenInput!) { createApiToken(input: $in) { token apiToken { id name } } }`, { in: optional(v) }),
      done: ({ createApiToken: p }) => {
        const shown = showOnce({ title: `Token ${p.apiToken.name}`, values: [{ label: 'Token', value: p.token, id: 'once-token' }],
          body: 'Shown once: only its hash is kept. Give it to its user now.' });
        ctx.onDispose(shown.close);
        reload();
        return `Created token ${p.apiToken.name}.`;
      },
    }),
    render: ({ apiTokensConnection: { totalCount, nodes } }, note, reload) => {
      replace(note, totalCount > nodes.length ? `The ${nodes.length} newest of ${plural(totalCount, 'token')}.` : plural(totalCount, 'token'));
      if (!nodes.length) return empty('No tokens yet.');
      return table([
        { label: 'Name', cell: (t) => h('strong', null, t.name) },
        { label: 'Role', cell: (t) => t.role.toLowerCase() },
        { label: 'Tenant', cell: (t) => t.tenant?.name || h('span', { class: 'muted' }, '—') },
        { label: 'Created', cell: (t) => time(t.createdAt) },
        { label: 'Expires', cell: (t) => (t.expiresAt ? time(t.expiresAt) : h('span', { class: 'muted' }, 'never')) },
        { label: 'State', cell: (t) => (t.revokedAt ? [tag('revoked', 'bad'), ' ', time(t.revokedAt)] : revokeToken(t, note, reload)) },
      ], nodes, { caption: 'API tokens', rowProps: (t) => ({ dataset: { id: t.id, name: t.name } }) });
    },
  });
}

// revokeToken revokes a token after a confirmation: it stops working at
// once.
function revokeToken(t, note, reload) {
  return h('button', {
    type: 'button', class: 'btn btn-small btn-danger', id: `revoke-token-${t.id}`,
    onclick: async () => {
      if (!await confirm({ title: `Revoke token ${t.name}?`, ok: 'Revoke token', danger: true,
        body: 'It stops working at once, on every open connection too.' })) return;
      try {
        await gql(`mutation RevokeToken($id: ID!) { revokeApiToken(input: {id: $id}) { apiToken { id } } }`, { id: t.id });
        replace(note, `Revoked token ${t.name}.`);
        reload();
      } catch (err) {
        replace(note, `Could not revoke token ${t.name}: ${describe(err)}`);
      }
    },
  }, 'Revoke');
}

export function providersPage(ctx) {
  listPage(ctx, {
    title: 'Provider accounts', what: 'provider accounts', id: 'providers-body',
    query: `query Providers { providerAccounts { id name provider settings tenant { name } createdAt } tenants { id name } }`,
    tools: (reload, { tenants }) => adminForm({
      prefix: 'new-account', what: 'provider account', label: 'New provider account', submit: 'Create provider account',
      specs: [
        { key: 'name', label: 'Name', required: true },
        { key: 'provider', label: 'Provider', type: 'select', options: [['HETZNER', 'Hetzner Cloud'], ['PROXMOX', 'Proxmox VE']], value: 'HETZNER' },
        { key: 'credentials', label: 'Credentials', type: 'password', required: true,
          hint: 'An API token (Hetzner) or USER@REALM!TOKENID=SECRET (Proxmox). Sealed at rest; never shown again.' },
        { key: 'settings', label: 'Settings (JSON, optional)', type: 'textarea', hint: 'Such as {"location": "fsn1"}, or a Proxmox endpoint, node, storage and template (docs/api.md).' },
        { key: 'tenantId', label: 'Tenant', type: 'select', options: choices(tenants, 'none: shared by operators') },
      ],
      run: (v) => {
        let settings = null;
        if (v.settings) {
          try {
            settings = JSON.parse(v.settings);
          } catch {
            return Promise.reject(new FieldError('settings', 'is not JSON.'));
          }
        }
        return gql(`mutation NewAccount($in: CreateProviderAccountInput!) { createProviderAccount(input: $in) { providerAccount { id name } } }`,
          { in: optional({ ...v, settings }) });
      },
      done: ({ createProviderAccount: { providerAccount: a } }) => { reload(); return `Created provider account ${a.name}.`; },
    }),
    render: ({ providerAccounts }, note, reload) => {
      replace(note, plural(providerAccounts.length, 'provider account'));
      if (!providerAccounts.length) return empty('No provider accounts yet.');
      return table([
        { label: 'Name', cell: (a) => h('strong', null, a.name) },
        { label: 'Provider', cell: (a) => a.provider.toLowerCase() },
        { label: 'Tenant', cell: (a) => a.tenant?.name || h('span', { class: 'muted' }, 'shared') },
        { label: 'Settings', cell: (a) => h('span', { class: 'mono small' }, JSON.stringify(a.settings || {})) },
        { label: 'Created', cell: (a) => time(a.createdAt) },
        { label: '', cell: (a) => deleteAccount(a, note, reload) },
      ], providerAccounts, { caption: 'Provider accounts', rowProps: (a) => ({ dataset: { id: a.id, name: a.name } }) });
    },
  });
}

function deleteAccount(a, note, reload) {
  return h('button', {
    type: 'button', class: 'btn btn-small btn-danger', id: `delete-account-${a.id}`,
    onclick: async () => {
      if (!await confirm({ title: `Delete provider account ${a.name}?`, ok: 'Delete account', danger: true,
        body: 'Its sealed credentials are destroyed. An account a pool or a live instance uses cannot be deleted.' })) return;
      try {
        await gql(`mutation DeleteAccount($id: ID!) { deleteProviderAccount(input: {id: $id}) { providerAccount { id } } }`, { id: a.id });
        replace(note, `Deleted provider account ${a.name}.`);
        reload();
      } catch (err) {
        replace(note, `Could not delete provider account ${a.name}: ${describe(err)}`);
      }
    },
  }, 'Delete');
}
