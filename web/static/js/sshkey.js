// Checks OpenSSH public key lines (authorized_keys format) in the browser,
// before anything is sent: the key type, a base64 body that decodes, and a
// body whose own type string and structure match.

// Each type's wire format: how many length-prefixed fields the body holds.
const TYPES = {
  'ssh-ed25519': 2, // type, 32-byte key
  'ssh-rsa': 3, // type, e, n
  'ecdsa-sha2-nistp256': 3, // type, curve, point
  'ecdsa-sha2-nistp384': 3,
  'ecdsa-sha2-nistp521': 3,
  'sk-ssh-ed25519@openssh.com': 3, // type, key, application
  'sk-ecdsa-sha2-nistp256@openssh.com': 4, // type, curve, point, application
};

export const KEY_TYPES = Object.keys(TYPES);
export const MAX_KEYS = 32;

// fields splits a key body into its length-prefixed strings, or returns
// null when the lengths do not add up.
function fields(bytes) {
  const out = [];
  let i = 0;
  while (i < bytes.length) {
    if (i + 4 > bytes.length) return null;
    const n = ((bytes[i] << 24) | (bytes[i + 1] << 16) | (bytes[i + 2] << 8) | bytes[i + 3]) >>> 0;
    i += 4;
    if (n > bytes.length - i) return null;
    out.push(bytes.subarray(i, i + n));
    i += n;
  }
  return out;
}

const ascii = (b) => String.fromCharCode(...b);

// checkKey returns null for a well-formed public key line, else what is
// wrong with it, in words.
export function checkKey(line) {
  const text = line.trim();
  if (/^-----BEGIN/.test(text) || /PRIVATE KEY/.test(text)) {
    return 'this is a private key: paste the public key (the .pub file) instead, and keep the private key secret';
  }
  const tokens = text.split(/\s+/);
  const at = tokens.findIndex((t) => t in TYPES);
  if (at < 0) {
    const cert = tokens.find((t) => t.endsWith('-cert-v01@openssh.com'));
    if (cert) return 'certificates are not accepted; paste the plain public key';
    if (tokens.includes('ssh-dss')) return 'DSA keys are not accepted; use ssh-ed25519, ssh-rsa or ecdsa';
    return `does not start with a key type (${KEY_TYPES.slice(0, 3).join(', ')}, …)`;
  }
  const type = tokens[at];
  const body = tokens[at + 1];
  if (!body) return `the key's base64 body is missing after ${type}`;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return "the key's body is not valid base64";
  let bytes;
  try {
    bytes = Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
  } catch {
    return "the key's body is not valid base64";
  }
  const f = fields(bytes);
  if (!f || f.length === 0) return "the key's body is truncated or damaged";
  const inner = ascii(f[0]);
  if (inner !== type) return `the line says ${type} but the key inside is ${inner.length < 60 ? inner || 'empty' : 'unreadable'}`;
  if (f.length !== TYPES[type]) return "the key's body is truncated or damaged";
  if ((type === 'ssh-ed25519' || type === 'sk-ssh-ed25519@openssh.com') && f[1].length !== 32) return 'the ed25519 key is not 32 bytes long';
  if (type.includes('ecdsa')) {
    const curve = type.match(/nistp\d+/)[0];
    if (ascii(f[1]) !== curve) return `the key's curve is not ${curve}`;
  }
  if (type === 'ssh-rsa' && f[2].length < 128) return 'the RSA key is shorter than 1024 bits';
  return null;
}

// parseKeys reads the textarea: one key a line; blank lines and lines that
// start with # are skipped. It returns the keys to send, each with its
// line number, and the errors by line.
export function parseKeys(text) {
  const keys = [];
  const errors = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const problem = checkKey(line);
    if (problem) errors.push({ line: i + 1, message: problem });
    keys.push({ line: i + 1, key: line });
  });
  return { keys, errors };
}
