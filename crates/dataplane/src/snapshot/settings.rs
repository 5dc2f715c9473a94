//! The node's settings in a snapshot (sysctls, IOAM namespaces, schemas and domains, the SRv6 tunnel source and
//! HMAC keys): derived from the configuration the same way when a snapshot is built and when a
//! [`Change::Settings`](super::Change::Settings) replaces them in place, so that both give the same snapshot.

use super::Snapshot;
use crate::hop::ioam::{IoamNode, Namespace};
use crate::hop::ioam_domain::Domains;
use crate::spec::{
    Config, ConfigError, DevSysctls, HmacKey, IoamDomain, IoamNamespace, IoamSchema, Sysctls,
};
use crate::tunnel::seg6::HmacSecret;
use std::collections::HashMap;
use std::net::Ipv6Addr;

/// The node's settings of a configuration: everything but its links, addresses, neighbours and routes
/// (`sysctl`, `ioam namespace|schema|domain`, `sr tunsrc|hmac` lines).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `ioam namespace add|set`.
    pub ioam_namespaces: Vec<IoamNamespace>,
    /// `ioam schema add`.
    pub ioam_schemas: Vec<IoamSchema>,
    /// `ioam domain add`.
    pub ioam_domains: Vec<IoamDomain>,
    /// `sr tunsrc set`.
    pub sr_tunsrc: Option<Ipv6Addr>,
    /// `sr hmac set`.
    pub hmac_keys: Vec<HmacKey>,
    /// `sysctl`.
    pub sysctl: Sysctls,
}

impl Settings {
    /// The settings of `cfg`.
    pub fn of(cfg: &Config) -> Settings {
        Settings {
            ioam_namespaces: cfg.ioam_namespaces.clone(),
            ioam_schemas: cfg.ioam_schemas.clone(),
            ioam_domains: cfg.ioam_domains.clone(),
            sr_tunsrc: cfg.sr_tunsrc,
            hmac_keys: cfg.hmac_keys.clone(),
            sysctl: cfg.sysctl.clone(),
        }
    }

    /// Whether two configurations have the same settings (without copying them).
    pub(super) fn same(a: &Config, b: &Config) -> bool {
        a.ioam_namespaces == b.ioam_namespaces
            && a.ioam_schemas == b.ioam_schemas
            && a.ioam_domains == b.ioam_domains
            && a.sr_tunsrc == b.sr_tunsrc
            && a.hmac_keys == b.hmac_keys
            && a.sysctl == b.sysctl
    }

    /// A configuration with these settings and nothing else (what [`Derived::of`] reads).
    fn config(&self) -> Config {
        Config {
            ioam_namespaces: self.ioam_namespaces.clone(),
            ioam_schemas: self.ioam_schemas.clone(),
            ioam_domains: self.ioam_domains.clone(),
            sr_tunsrc: self.sr_tunsrc,
            hmac_keys: self.hmac_keys.clone(),
            sysctl: self.sysctl.clone(),
            ..Config::default()
        }
    }
}

/// What a snapshot holds of the settings.
pub(super) struct Derived {
    hmac: HashMap<u32, HmacSecret>,
    tunsrc: Option<Ipv6Addr>,
    ioam: IoamNode,
    seg6_flowlabel: i32,
    all: DevSysctls,
    /// Per link (by [`DevId`]).
    dev: Vec<DevSysctls>,
}

impl Derived {
    /// The settings of `cfg` for a snapshot whose links are those of `snap` (the settings' own fields are all
    /// `cfg` gives).
    pub(super) fn of(cfg: &Config, snap: &Snapshot) -> Result<Derived, ConfigError> {
        let hmac = cfg
            .hmac_keys
            .iter()
            .map(|k| {
                (
                    k.key_id,
                    HmacSecret {
                        algo: k.algo,
                        secret: k.secret.clone(),
                    },
                )
            })
            .collect();
        let mut ioam = IoamNode {
            node_id: cfg.sysctl.ioam6_id,
            node_id_wide: cfg.sysctl.ioam6_id_wide,
            namespaces: HashMap::default(),
            domains: Domains::build(cfg, snap.links.len(), |n| snap.by_name.get(n).copied())?,
        };
        for ns in &cfg.ioam_namespaces {
            let schema = ns
                .schema
                .and_then(|sid| cfg.ioam_schemas.iter().find(|s| s.id == sid))
                .map(|s| {
                    let mut d = s.data.clone();
                    d.resize(s.data.len().div_ceil(4) * 4, 0);
                    (s.id, d)
                });
            ioam.namespaces.insert(
                ns.id,
                Namespace {
                    data: ns.data,
                    wide: ns.wide,
                    schema,
                },
            );
        }
        Ok(Derived {
            hmac,
            tunsrc: cfg.sr_tunsrc.filter(|a| !a.is_unspecified()),
            ioam,
            seg6_flowlabel: cfg.sysctl.seg6_flowlabel,
            all: cfg.sysctl.all,
            dev: snap
                .links
                .iter()
                .map(|l| cfg.sysctl.dev.get(&l.name).copied().unwrap_or_default())
                .collect(),
        })
    }
}

impl Snapshot {
    /// Puts derived settings in place (no plan is made again).
    pub(super) fn set_settings(&mut self, d: Derived) {
        self.hmac = d.hmac;
        self.tunsrc = d.tunsrc;
        self.ioam = d.ioam;
        self.seg6_flowlabel = d.seg6_flowlabel;
        self.seg6_first_word = if d.seg6_flowlabel < 0 {
            0xfff0_0000
        } else {
            u32::MAX
        };
        self.all = d.all;
        for (l, s) in self.links.iter_mut().zip(d.dev) {
            l.sysctl = s;
        }
    }

    /// [`Change::Settings`](super::Change::Settings): the settings replaced, then the plans that depend on what
    /// changed made again. Seg6 encap plans depend on the outer source and the HMAC keys;
    /// ioam6 plans on the node's and the interfaces' ids and the namespaces (baked into their templates). Only
    /// the tunnels whose plan depends on the settings at all ([`super::deps`]) are looked at, and of those only
    /// the kind a setting reaches (seg6 or ioam6; for a key, the tunnels naming it): a setting that changes what
    /// every such plan writes (the tunnel source, in every seg6 encap template) costs one plan per such tunnel,
    /// any other line nothing per route.
    pub(super) fn apply_settings(&mut self, s: &Settings) -> Result<(), ConfigError> {
        let d = Derived::of(&s.config(), self)?;
        // `seg6_flowlabel` is read per packet (the fast path leaves seg6 encap packets to the general path when
        // it is 1): no plan depends on it.
        let tunsrc = (d.tunsrc != self.tunsrc).then_some(d.tunsrc);
        // The keys set, changed or gone: only the tunnels naming one of them are planned again for the keys.
        let mut keys: Vec<u32> = d
            .hmac
            .iter()
            .filter(|(k, v)| self.hmac.get(k) != Some(v))
            .map(|(k, _)| *k)
            .chain(
                self.hmac
                    .keys()
                    .filter(|k| !d.hmac.contains_key(k))
                    .copied(),
            )
            .collect();
        keys.sort_unstable();
        let ioam = d.ioam.node_id != self.ioam.node_id
            || d.ioam.node_id_wide != self.ioam.node_id_wide
            || d.ioam.namespaces != self.ioam.namespaces
            || self.links.iter().zip(&d.dev).any(|(l, n)| {
                (l.sysctl.ioam6_id, l.sysctl.ioam6_id_wide) != (n.ioam6_id, n.ioam6_id_wide)
            });
        self.set_settings(d);
        self.replan_settings_deps(tunsrc, &keys, ioam);
        Ok(())
    }
}
