//! Unit tests for [`super`]: the layers overlaid in order (defaults, file, environment, flags), unknown keys and
//! bad values refused with their path, and the shipped config file matching the defaults.
#![expect(
    clippy::unwrap_used,
    reason = "a test fails loudly on what it did not expect"
)]

use super::*;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_when_nothing_is_set() {
    let c = Config::resolve(RawConfig::default()).unwrap();
    assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
    assert_eq!(c.upstream.url.as_str(), "https://api.openai.com/v1");
    assert_eq!(c.store_path, PathBuf::from(DEFAULT_STORE_PATH));
    assert_eq!(c.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
}

#[test]
fn file_then_env_then_flags() {
    let file = parse_toml(
        Path::new("t.toml"),
        "[server]\nlisten = \"127.0.0.1:1\"\nmax_body_bytes = 10\n[upstream]\nurl = \"http://file/v1\"\n",
    )
    .unwrap();
    let from_env = env::from_env(&env(&[
        ("CTXGATE_SERVER_LISTEN", "127.0.0.1:2"),
        ("CTXGATE_UPSTREAM_URL", "http://env/v1"),
    ]))
    .unwrap();
    let mut flags = RawConfig::default();
    flags.upstream.url = Some("http://flag/v1".into());
    let c = Config::resolve(file.overlay(from_env).overlay(flags)).unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:2");
    assert_eq!(c.upstream.url.as_str(), "http://flag/v1");
    assert_eq!(c.max_body_bytes, 10);
}

#[test]
fn unknown_key_is_named() {
    let err = parse_toml(Path::new("t.toml"), "[server]\nlisen = \"x\"\n").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("lisen"), "{text}");
}

#[test]
fn proxy_held_key_needs_client_keys() {
    let mut raw = RawConfig::default();
    raw.upstream.api_key_env = Some("OPENAI_API_KEY".into());
    let err = Config::resolve(raw).unwrap_err();
    assert!(err.to_string().contains("auth.keys"));
}

#[test]
fn agent_switches_come_from_the_env() {
    let raw = env::from_env(&env(&[
        ("CTXGATE_COMPRESS_AGENT_NOTES", "false"),
        ("CTXGATE_COMPRESS_AGENT_STEPS", "true"),
    ]))
    .unwrap();
    let c = Config::resolve(raw).unwrap();
    assert!(!c.compress.agent_notes);
    assert!(c.compress.agent_steps);
    assert!(
        Config::resolve(RawConfig::default())
            .unwrap()
            .compress
            .agent_notes
    );
    let err = env::from_env(&env(&[("CTXGATE_COMPRESS_AGENT_NOTES", "maybe")])).unwrap_err();
    assert!(err.to_string().contains("CTXGATE_COMPRESS_AGENT_NOTES"));
}

#[test]
fn the_eager_tool_is_on_for_long_heads_unless_set_to_zero() {
    assert_eq!(
        Config::resolve(RawConfig::default())
            .unwrap()
            .expand
            .eager_min_head_tokens,
        1024
    );
    let raw = env::from_env(&env(&[("CTXGATE_EXPAND_EAGER_MIN_HEAD_TOKENS", "0")])).unwrap();
    assert_eq!(
        Config::resolve(raw).unwrap().expand.eager_min_head_tokens,
        0
    );
    let raw = env::from_env(&env(&[("CTXGATE_EXPAND_EAGER_MIN_HEAD_TOKENS", "1024")])).unwrap();
    assert_eq!(
        Config::resolve(raw).unwrap().expand.eager_min_head_tokens,
        1024
    );
    let err = env::from_env(&env(&[("CTXGATE_EXPAND_EAGER_MIN_HEAD_TOKENS", "lots")])).unwrap_err();
    assert!(
        err.to_string()
            .contains("CTXGATE_EXPAND_EAGER_MIN_HEAD_TOKENS")
    );
}

#[test]
fn admin_keys_come_from_file_or_env_and_are_checked() {
    let c = Config::resolve(RawConfig::default()).unwrap();
    assert!(c.auth.admin_keys.is_empty(), "off by default");
    let raw = env::from_env(&env(&[("CTXGATE_AUTH_ADMIN_KEYS", "ops-1, ops-2")])).unwrap();
    assert_eq!(
        Config::resolve(raw).unwrap().auth.admin_keys,
        ["ops-1", "ops-2"]
    );
    let raw = parse_toml(Path::new("t.toml"), "[auth]\nadmin_keys = [\" \"]\n").unwrap();
    let err = Config::resolve(raw).unwrap_err().to_string();
    assert!(
        err.contains("auth.admin_keys") && err.contains("empty"),
        "{err}"
    );
    let raw = parse_toml(
        Path::new("t.toml"),
        "[auth]\nkeys = [\"client-1\"]\nadmin_keys = [\"client-1\"]\n",
    )
    .unwrap();
    let err = Config::resolve(raw).unwrap_err().to_string();
    assert!(
        err.contains("also a client key") && !err.contains("client-1"),
        "{err}"
    );
}

#[test]
fn bad_env_number_is_a_clear_error() {
    let err = env::from_env(&env(&[("CTXGATE_SERVER_MAX_BODY_BYTES", "lots")])).unwrap_err();
    assert!(err.to_string().contains("CTXGATE_SERVER_MAX_BODY_BYTES"));
}

#[test]
fn shipped_config_file_parses_and_matches_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/ctxgate.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let raw = parse_toml(&path, &text).unwrap();
    let c = Config::resolve(raw).unwrap();
    let d = Config::resolve(RawConfig::default()).unwrap();
    assert_eq!(c.listen, d.listen);
    assert_eq!(c.upstream.url, d.upstream.url);
    assert_eq!(c.max_body_bytes, d.max_body_bytes);
    assert_eq!(c.upstream.read_timeout, d.upstream.read_timeout);
    assert_eq!(c.store_path, d.store_path);
    assert_eq!(c.fold.fold, d.fold.fold);
    assert_eq!(c.fold.record_ttl, d.fold.record_ttl);
    assert_eq!(c.compress, d.compress);
    assert_eq!(c.expand, d.expand);
    assert_eq!(c.store_max_bytes, d.store_max_bytes);
    assert_eq!(c.store, d.store);
}

#[test]
fn the_store_url_and_its_settings_come_from_the_environment() {
    let raw = env::from_env(&env(&[
        ("CTXGATE_STORE_URL", "redis+cluster://h1:7000,h2:7001"),
        ("CTXGATE_STORE_KEY_PREFIX", "team-a:"),
        ("CTXGATE_STORE_TIMEOUT_MS", "250"),
        ("CTXGATE_STORE_PASSWORD_ENV", "REDIS_PASSWORD"),
        ("CTXGATE_STORE_LOCK_TTL_MS", "5000"),
    ]))
    .unwrap();
    let c = Config::resolve(raw).unwrap();
    let redis = c.store.redis.unwrap();
    assert!(redis.cluster);
    assert_eq!(redis.nodes.len(), 2);
    assert_eq!(redis.key_prefix, "team-a:");
    assert_eq!(redis.timeout, Duration::from_millis(250));
    assert_eq!(redis.password_env.as_deref(), Some("REDIS_PASSWORD"));
    assert_eq!(c.store.lock_ttl, Duration::from_millis(5000));
    let bad = env::from_env(&env(&[("CTXGATE_STORE_URL", "memcached://h:1")])).unwrap();
    let err = Config::resolve(bad).unwrap_err().to_string();
    assert!(err.contains("store.url"), "{err}");
}

#[test]
fn fold_section_parses_pins_and_rejects_bad_modes() {
    let raw = parse_toml(
        Path::new("t.toml"),
        "[fold]\nmode = \"local\"\nbudget = 5000\n[[fold.pins]]\nby = \"text\"\ncontains = \"POLICY\"\n",
    )
    .unwrap();
    let c = Config::resolve(raw).unwrap();
    assert_eq!(c.fold.fold.mode, crate::fold::FoldMode::Local);
    assert_eq!(c.fold.fold.budget, 5000);
    assert_eq!(c.fold.fold.pins.len(), 1);
    let raw = parse_toml(Path::new("t.toml"), "[fold]\nmode = \"sometimes\"\n").unwrap();
    assert!(
        Config::resolve(raw)
            .unwrap_err()
            .to_string()
            .contains("fold.mode")
    );
}
