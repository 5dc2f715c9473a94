//! What makes `lwt6` install like a tool: shell completions and manual pages, both generated from the command
//! line's own definition (so they never disagree with `--help`).

use super::{Cli, Failure, fail};
use clap::{Args, CommandFactory, ValueEnum};
use std::path::PathBuf;

/// `lwt6 completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Shells `lwt6 completions` generates for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    /// GNU Bash (`lwt6 completions bash > /etc/bash_completion.d/lwt6`).
    Bash,
    /// Z shell (`lwt6 completions zsh > "${fpath[1]}/_lwt6"`).
    Zsh,
    /// fish (`lwt6 completions fish > ~/.config/fish/completions/lwt6.fish`).
    Fish,
    /// Elvish.
    Elvish,
    /// PowerShell.
    Powershell,
}

/// `lwt6 man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write every page under DIR, laid out as a MANPATH entry: `man1/lwt6.1`, one `man1/lwt6-SUBCOMMAND.1` per
    /// subcommand (`lwt6-bench-sweep.1` for `lwt6 bench sweep`), and `man5/lwt6.conf.5` (the configuration and
    /// control language). Without it, `lwt6.1` is printed.
    #[arg(long = "out-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `lwt6.conf(5)`: the configuration and control language, written by hand (`docs/man/lwt6.conf.5`).
pub const CONF_PAGE: &str = include_str!("../../docs/man/lwt6.conf.5");

/// Prints the completion script for `a.shell`.
pub fn completions(a: &CompletionsArgs) -> Result<(), Failure> {
    use clap_complete::Shell as S;
    let shell = match a.shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Elvish => S::Elvish,
        Shell::Powershell => S::PowerShell,
    };
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "lwt6", &mut script);
    super::stdio::write_stdout(&script, "the completion script")
}

/// The command line as the pages describe it: built (so every subcommand has its full display name,
/// `lwt6-bench-sweep`), without the `help` subcommand, which would otherwise be listed as a page of its own.
fn command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// Every page of `cmd` and of its subcommands, recursively: (page name, command, parent page name).
fn pages(
    cmd: &clap::Command,
    parent: Option<&str>,
    out: &mut Vec<(String, clap::Command, Option<String>)>,
) {
    let name = cmd
        .get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string();
    out.push((
        name.clone(),
        cmd.clone().version(env!("CARGO_PKG_VERSION")),
        parent.map(str::to_string),
    ));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages(sub, Some(&name), out);
    }
}

/// Prints `lwt6.1`, or writes every page under `a.out_dir`.
pub fn man(a: &ManArgs) -> Result<(), Failure> {
    let cmd = command();
    let Some(dir) = &a.out_dir else {
        return super::stdio::write_stdout(&render(&cmd, None)?, "the manual page");
    };
    let at = |p: &std::path::Path, e: std::io::Error| fail(format!("{}: {e}", p.display()));
    let (man1, man5) = (dir.join("man1"), dir.join("man5"));
    for d in [&man1, &man5] {
        std::fs::create_dir_all(d).map_err(|e| at(d, e))?;
    }
    let mut all = Vec::new();
    pages(&cmd, None, &mut all);
    let conf = man5.join("lwt6.conf.5");
    // Every page's path is checked before the first is written.
    for path in all
        .iter()
        .map(|(name, _, _)| man1.join(format!("{name}.1")))
        .chain([conf.clone()])
    {
        crate::io::output::check(&path).map_err(|e| fail(e.to_string()))?;
    }
    let mut written = Vec::new();
    for (name, page, parent) in all {
        let path = man1.join(format!("{name}.1"));
        crate::io::output::write_file(&path, &render(&page, parent.as_deref())?)
            .map_err(|e| fail(e.to_string()))?;
        written.push(path);
    }
    crate::io::output::write_file(&conf, CONF_PAGE.as_bytes()).map_err(|e| fail(e.to_string()))?;
    written.push(conf);
    for p in written {
        out!("{}", p.display());
    }
    Ok(())
}

/// Subcommands whose page points at `lwt6.conf(5)`: those that read a configuration or send its lines.
const USE_CONF: &[&str] = &[
    "lwt6",
    "lwt6-pcap",
    "lwt6-show",
    "lwt6-show-routes",
    "lwt6-check",
    "lwt6-run",
    "lwt6-ctl",
];

/// A page: clap_mangen's sections, then SEE ALSO (the parent page, and `lwt6.conf(5)` where a configuration is read).
fn render(cmd: &clap::Command, parent: Option<&str>) -> Result<Vec<u8>, Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .source(format!("lwt6 {}", env!("CARGO_PKG_VERSION")))
        .render(&mut page)
        .map_err(|e| fail(format!("man page: {e}")))?;
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    let mut refs: Vec<String> = Vec::new();
    if let Some(p) = parent {
        refs.push(format!("{p} 1"));
    }
    if USE_CONF.contains(&name) {
        refs.push("lwt6.conf 5".into());
    }
    if !refs.is_empty() {
        page.extend_from_slice(b".SH \"SEE ALSO\"\n");
        let last = refs.len() - 1;
        for (i, r) in refs.iter().enumerate() {
            let (n, section) = r.split_once(' ').unwrap_or((r, "1"));
            let sep = if i == last { "" } else { "," };
            page.extend_from_slice(
                format!(".BR {} ({section}){sep}\n", n.replace('-', "\\-")).as_bytes(),
            );
        }
    }
    Ok(page)
}
