// The GraphQL API over HTTP, and the session's token. The token lives in
// sessionStorage only: it is gone when the tab closes or on "Log out".

const KEY = 'bc.token';

export function getToken() {
  try {
    return sessionStorage.getItem(KEY) || '';
  } catch {
    return '';
  }
}

export function setToken(token) {
  try {
    if (token) sessionStorage.setItem(KEY, token);
    else sessionStorage.removeItem(KEY);
  } catch {
    // Storage refused (private mode quotas): the session lasts this page only.
  }
  memo = token || '';
}

let memo = '';

function token() {
  return getToken() || memo;
}

// ApiError carries the API's errors: code (extensions.code), field
// (extensions.field, the input it names) and limit (a quota's).
export class ApiError extends Error {
  constructor(errors, status) {
    const first = errors[0] || {};
    super(first.message || 'request failed');
    this.errors = errors;
    this.status = status;
    this.code = first.extensions?.code || 'INTERNAL';
    this.field = first.extensions?.field || '';
    this.limit = first.extensions?.limit || '';
  }
}

const listeners = new Set();

// onUnauthenticated calls fn whenever the API says the token is no good.
export function onUnauthenticated(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// gql runs one operation and returns its data, or throws an ApiError
// (code NETWORK when the server could not be reached).
export async function gql(query, variables = {}, { signal, bearer } = {}) {
  let resp;
  try {
    resp = await fetch('/graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${bearer ?? token()}` },
      body: JSON.stringify({ query, variables }),
      signal,
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError([{ message: 'The server could not be reached. Check your connection and try again.', extensions: { code: 'NETWORK' } }], 0);
  }
  let body;
  try {
    body = await resp.json();
  } catch {
    throw new ApiError([{ message: `The server answered ${resp.status} ${resp.statusText} without a GraphQL response.`, extensions: { code: 'INTERNAL' } }], resp.status);
  }
  if (body.errors?.length) {
    const err = new ApiError(body.errors, resp.status);
    err.requestId = resp.headers.get('X-Request-Id') || '';
    if (err.code === 'UNAUTHENTICATED' && bearer === undefined) listeners.forEach((fn) => fn(err));
    throw err;
  }
  return body.data;
}

// fetchFile GETs path (a file the API serves, such as /usage.csv) with the
// token in Authorization, never in the URL, and returns its body as a
// Blob, or throws an ApiError: the API's own errors ({"errors": [...]}) or
// NETWORK.
export async function fetchFile(path, { signal } = {}) {
  let resp;
  try {
    resp = await fetch(path, { headers: { Authorization: `Bearer ${token()}` }, signal, cache: 'no-store', credentials: 'omit' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError([{ message: 'The server could not be reached. Check your connection and try again.', extensions: { code: 'NETWORK' } }], 0);
  }
  if (resp.ok) return resp.blob();
  let errors;
  try {
    errors = (await resp.json()).errors;
  } catch {
    // Not the API's JSON: say what the server answered.
  }
  const err = new ApiError(errors?.length ? errors : [{ message: `The server answered ${resp.status} ${resp.statusText}.`, extensions: { code: 'INTERNAL' } }], resp.status);
  err.requestId = resp.headers.get('X-Request-Id') || '';
  if (err.code === 'UNAUTHENTICATED') listeners.forEach((fn) => fn(err));
  throw err;
}

// describe turns any error into a sentence for the page.
export function describe(err) {
  if (err instanceof ApiError) {
    switch (err.code) {
      case 'NETWORK':
        return err.message;
      case 'FORBIDDEN':
        return 'Your token may not do this (operators only).';
      case 'INTERNAL':
        return `The server failed (internal error${err.requestId ? `, request ${err.requestId}` : ''}). Try again; if it persists, tell an operator.`;
      default:
        return err.message;
    }
  }
  return err?.message || String(err);
}
