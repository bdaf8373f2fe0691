// Tests of scripts/check-app-facade.mjs: it must catch a planted decision, and only a real one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { check, compare, parseAllow } from './check-app-facade.mjs';

const thin = `
impl App {
    /// A facade method: resolve, call one step function, map.
    pub fn host_check(&self, label: &str) -> Result<Report, CoreError> {
        let key = self.host_key_for(label, None)?;
        crate::remote::check(&key).map_err(CoreError::from)
    }
}
`;
const mod = `
pub mod hosts;
pub mod billing;
#[cfg(test)]
#[path = "hosts_tests.rs"]
mod tests;
impl App {
    pub(crate) fn host_key_for(&self, label: &str, k: Option<&str>) -> Result<Key, CoreError> {
        todo!()
    }
}
`;
const billing = `
impl App {
    pub fn cost_report(&self) -> Result<(), CoreError> {
        crate::billing::report::build(&self.store())
    }
}
`;

test('a thin facade passes', () => {
  const found = check([
    { name: 'mod.rs', text: mod },
    { name: 'hosts.rs', text: thin },
    { name: 'billing.rs', text: billing },
  ]);
  assert.deepEqual([...found], []);
});

test('a planted match, if, loop, constant, clock and sibling call are each caught', () => {
  const planted = `
impl App {
    pub fn host_check(&self, label: &str) -> Result<Report, CoreError> {
        let key = self.host_key_for(label, None)?;
        match key.kind { Kind::A => {} _ => {} }
        if label.is_empty() { return Err(CoreError::Invalid); }
        for h in self.store().hosts()? { let _ = h; }
        let grace = 10 * 60 * 1000;
        let t0 = std::time::Instant::now();
        self.clock.sleep(WAIT);
        let _ = self.cost_report()?;
        crate::remote::check(&key).map_err(CoreError::from)
    }
}
`;
  const found = check([
    { name: 'mod.rs', text: mod },
    { name: 'hosts.rs', text: planted },
    { name: 'billing.rs', text: billing },
  ]);
  assert.deepEqual(found.get('hosts.rs::App::host_check'), ['const', 'if', 'loop', 'match', 'sibling', 'time']);
});

test('a body over 15 lines is long; test modules, comments and strings are not read', () => {
  const long = `
impl App {
    pub fn host_check(&self) -> Result<(), CoreError> {
${'        step()?;\n'.repeat(16)}        Ok(())
    }
}
#[cfg(test)]
mod tests {
    fn helper() { match 1 { _ => {} } }
}
`;
  const words = `
impl App {
    /// match if for: words in a doc comment.
    pub fn host_check(&self) -> Result<(), CoreError> {
        // if this were code it would count: match x {}
        log("match { if for } while loop 86400000");
        let c = '{';
        Ok(())
    }
}
`;
  const found = check([
    { name: 'mod.rs', text: mod },
    { name: 'hosts.rs', text: long },
    { name: 'billing.rs', text: words },
    { name: 'hosts_tests.rs', text: 'fn t() { match 1 { _ => {} } }' },
  ]);
  assert.deepEqual([...found], [['hosts.rs::App::host_check', ['long']]]);
});

test('the allow-list only shrinks: a new violation and a gone one both fail', () => {
  const allow = parseAllow('# comment\nhosts.rs::App::a  if match\nhosts.rs::App::b  long\n');
  const found = new Map([
    ['hosts.rs::App::a', ['if', 'match']],
    ['hosts.rs::App::c', ['match']],
  ]);
  assert.deepEqual(compare(found, allow), { fresh: ['hosts.rs::App::c  match'], gone: ['hosts.rs::App::b  long'] });
});

test("today's tree matches its allow-list, and a match planted in a thin method is caught", () => {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const dir = join(root, 'crates', 'gpurent-core', 'src', 'app');
  const files = readdirSync(dir)
    .filter((n) => n.endsWith('.rs'))
    .map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
  const allow = parseAllow(readFileSync(join(root, 'scripts', 'app-facade-allow.txt'), 'utf8'));
  assert.deepEqual(compare(check(files), allow), { fresh: [], gone: [] });

  const planted = files.map((f) =>
    f.name === 'estimate.rs' ? { ...f, text: f.text.replace(/(pub fn \w+\([^)]*\)[^{]*\{)/, '$1\n        match 0u8 { _ => {} }') } : f,
  );
  const fresh = compare(check(planted), allow).fresh;
  assert.equal(fresh.length, 1, String(fresh));
  assert.match(fresh[0], /^estimate\.rs::App::\w+ .*match/);
});
