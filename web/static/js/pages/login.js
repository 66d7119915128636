// Log in with an API token. The token is checked with a viewer query
// before it is kept (sessionStorage only).
import { h } from '../dom.js';
import { gql, ApiError, describe } from '../api.js';

const VIEWER = `query Viewer { viewer { principal { id name role } tenant { id name } } }`;

export function loginPage({ main, onLogin, markUsable }) {
  const flash = sessionStorage.getItem('bc.flash');
  sessionStorage.removeItem('bc.flash');
  const input = h('input', {
    id: 'login-token', name: 'token', type: 'password', required: true, autocomplete: 'off', spellcheck: 'false',
    autocapitalize: 'off', 'aria-describedby': 'login-token-hint login-token-error',
  });
  const error = h('p', { class: 'field-error', id: 'login-token-error' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'login-submit' }, 'Log in');
  const form = h('form', { class: 'card login', id: 'login-form', novalidate: true },
    h('h1', { tabindex: '-1' }, 'Log in'),
    flash && h('p', { class: 'alert shown', role: 'alert' }, flash),
    h('div', { class: 'field' },
      h('label', { for: 'login-token' }, 'API token'),
      h('p', { class: 'hint', id: 'login-token-hint' },
        'A bearer token (bct_…) from your operator, or the operator and member tokens ', h('code', null, 'make dev'), ' prints. ',
        'It is kept in this browser tab only and forgotten when you log out or close the tab.'),
      input, error),
    h('div', { class: 'actions' }, submit));

  const setError = (msg) => {
    error.textContent = msg;
    if (msg) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  };

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    performance.mark('bc-login-submit');
    const token = input.value.trim();
    if (!token) {
      setError('Enter your API token.');
      input.focus();
      return;
    }
    setError('');
    submit.disabled = true;
    submit.textContent = 'Checking…';
    try {
      const data = await gql(VIEWER, {}, { bearer: token });
      onLogin(token, data.viewer);
    } catch (err) {
      submit.disabled = false;
      submit.textContent = 'Log in';
      setError(err instanceof ApiError && err.code === 'UNAUTHENTICATED'
        ? 'This token is not valid: it is unknown, revoked or expired.'
        : describe(err));
      input.focus();
    }
  });
  main.append(form);
  input.focus();
  markUsable();
}
