// The API explorer served at GET /graphql to a browser: an operation
// editor, its variables and result, and the schema read by introspection.
// The token is typed into the page (or taken from the console's session
// in this tab) and sent only in the Authorization header.

const $ = (id) => document.getElementById(id);
const CONSOLE_TOKEN = 'bc.token';

let token = '';
let types = new Map(); // name → introspected type
let roots = [];        // [label, type name] of the root operation types
let trail = [];        // the type names the schema pane went through

const INTROSPECTION = `query Explorer {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types {
      kind name description
      fields(includeDeprecated: true) { name description isDeprecated deprecationReason args { name description type { ...Ref } } type { ...Ref } }
      inputFields { name description type { ...Ref } }
      enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
    }
  }
}
fragment Ref on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`;

// post runs an operation and returns the HTTP status and the decoded body.
async function post(query, variables) {
  const resp = await fetch('/graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  let body;
  try {
    body = await resp.json();
  } catch {
    body = { errors: [{ message: `the server answered ${resp.status} without JSON` }] };
  }
  return { status: resp.status, body };
}

function el(tag, props = {}, ...children) {
  const n = document.createElement(tag);
  Object.assign(n, props);
  for (const c of children) n.append(c);
  return n;
}

// typeRef renders a type reference (NON_NULL, LIST, named) with its named
// type as a link into the schema pane.
function typeRef(ref) {
  if (ref.kind === 'NON_NULL') return [...typeRef(ref.ofType), '!'];
  if (ref.kind === 'LIST') return ['[', ...typeRef(ref.ofType), ']'];
  return [el('button', { type: 'button', textContent: ref.name, onclick: () => show(ref.name, true) })];
}

function fieldItem(f) {
  const args = (f.args || []).length
    ? ['(', ...f.args.flatMap((a, i) => [i ? ', ' : '', `${a.name}: `, ...typeRef(a.type)]), ')']
    : [];
  const dt = el('dt', { className: f.isDeprecated ? 'ex-deprecated' : '' }, f.name, ...args, ': ', ...typeRef(f.type));
  const about = [f.description, f.isDeprecated ? `Deprecated: ${f.deprecationReason || 'no reason given'}` : '']
    .filter(Boolean).join(' ');
  return [dt, el('dd', { textContent: about || '' })];
}

function crumbs() {
  const nav = $('ex-crumbs');
  nav.replaceChildren(el('button', { type: 'button', textContent: 'Root', onclick: () => { trail = []; render(); } }));
  trail.forEach((name, i) => {
    nav.append(' › ', el('button', { type: 'button', textContent: name, onclick: () => { trail = trail.slice(0, i + 1); render(); } }));
  });
}

// show opens the type name in the schema pane.
function show(name, push) {
  if (!types.has(name)) return;
  trail = push ? [...trail, name] : [name];
  render();
}

function render() {
  crumbs();
  const pane = $('ex-schema');
  const filter = $('ex-search').value.trim().toLowerCase();
  if (!types.size) return;
  if (filter) {
    const dl = el('dl');
    for (const t of types.values()) {
      if (t.name.startsWith('__')) continue;
      if (t.name.toLowerCase().includes(filter)) dl.append(el('dt', {}, el('button', { type: 'button', textContent: t.name, onclick: () => show(t.name, false) })), el('dd', { textContent: t.description || t.kind.toLowerCase() }));
      for (const f of t.fields || []) {
        if (!f.name.toLowerCase().includes(filter)) continue;
        const [dt, dd] = fieldItem(f);
        dt.prepend(`${t.name}.`);
        dl.append(dt, dd);
      }
    }
    pane.replaceChildren(dl.children.length ? dl : el('p', { className: 'muted', textContent: 'Nothing matches.' }));
    return;
  }
  const name = trail.at(-1);
  if (!name) {
    pane.replaceChildren(...roots.map(([label, type]) => el('section', {},
      el('h2', { textContent: label }), el('dl', {}, ...(types.get(type).fields || []).flatMap(fieldItem)))));
    return;
  }
  const t = types.get(name);
  const body = [el('h2', { textContent: `${t.name} (${t.kind.toLowerCase().replace('_', ' ')})` })];
  if (t.description) body.push(el('p', { textContent: t.description }));
  if (t.fields) body.push(el('dl', {}, ...t.fields.flatMap(fieldItem)));
  if (t.inputFields) body.push(el('dl', {}, ...t.inputFields.flatMap(fieldItem)));
  if (t.enumValues) {
    body.push(el('dl', {}, ...t.enumValues.flatMap((v) => [
      el('dt', { className: v.isDeprecated ? 'ex-deprecated' : '', textContent: v.name }), el('dd', { textContent: v.description || '' })])));
  }
  pane.replaceChildren(...body);
}

// useToken loads the schema with the token typed in.
async function useToken(ev) {
  ev?.preventDefault();
  token = $('ex-token').value.trim();
  const status = $('ex-auth-status');
  if (!token) {
    status.textContent = 'Type a token first.';
    return;
  }
  status.textContent = 'Loading the schema…';
  try {
    const { body } = await post(INTROSPECTION, {});
    if (body.errors?.length) {
      status.textContent = `Refused: ${body.errors[0].message}`;
      document.documentElement.dataset.schema = 'refused';
      return;
    }
    const s = body.data.__schema;
    types = new Map(s.types.map((t) => [t.name, t]));
    roots = [['Queries', s.queryType?.name], ['Mutations', s.mutationType?.name], ['Subscriptions', s.subscriptionType?.name]]
      .filter(([, n]) => n && types.has(n));
    trail = [];
    render();
    status.textContent = `Schema loaded: ${types.size} types.`;
    document.documentElement.dataset.schema = 'loaded';
  } catch (err) {
    status.textContent = `The server could not be reached: ${err.message}`;
  }
}

async function run() {
  const out = $('ex-result');
  let variables;
  try {
    variables = JSON.parse($('ex-vars').value || '{}');
  } catch (err) {
    out.classList.add('ex-error');
    out.textContent = `The variables are not JSON: ${err.message}`;
    return;
  }
  if (!token) token = $('ex-token').value.trim();
  out.classList.remove('ex-error');
  out.textContent = 'Running…';
  try {
    const { status, body } = await post($('ex-query').value, variables);
    out.classList.toggle('ex-error', !!body.errors?.length);
    out.textContent = `${status}\n${JSON.stringify(body, null, 2)}`;
  } catch (err) {
    out.classList.add('ex-error');
    out.textContent = `The server could not be reached: ${err.message}`;
  }
  document.documentElement.dataset.ran = String(Number(document.documentElement.dataset.ran || 0) + 1);
}

$('ex-auth').addEventListener('submit', useToken);
$('ex-run').addEventListener('click', run);
$('ex-search').addEventListener('input', render);
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
    ev.preventDefault();
    run();
  }
});
try {
  const session = sessionStorage.getItem(CONSOLE_TOKEN);
  if (session) {
    $('ex-token').value = session;
    useToken();
  }
} catch {
  // Storage refused: the token is typed in.
}
document.documentElement.dataset.usable = 'explorer';
