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
    /// Write `lwt6.1` and one `lwt6-SUBCOMMAND.1` page per subcommand into DIR instead of printing `lwt6.1`.
    #[arg(long = "out-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

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

/// Prints `lwt6.1`, or writes every page into `a.out_dir`.
pub fn man(a: &ManArgs) -> Result<(), Failure> {
    let cmd = Cli::command();
    let Some(dir) = &a.out_dir else {
        return super::stdio::write_stdout(&render(&cmd)?, "the manual page");
    };
    let at = |e: std::io::Error| fail(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(at)?;
    let mut written = Vec::new();
    let mut pages = vec![("lwt6".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("lwt6-{}", sub.get_name());
        // A subcommand's page is titled with its full name, as `git-commit(1)` is.
        let page = sub
            .clone()
            .display_name(name.clone())
            .bin_name(format!("lwt6 {}", sub.get_name()))
            .version(env!("CARGO_PKG_VERSION"));
        pages.push((name, page));
    }
    // Every page's path is checked before the first is written.
    for (name, _) in &pages {
        crate::io::output::check(&dir.join(format!("{name}.1")))
            .map_err(|e| fail(e.to_string()))?;
    }
    for (name, page) in pages {
        let path = dir.join(format!("{name}.1"));
        crate::io::output::write_file(&path, &render(&page)?).map_err(|e| fail(e.to_string()))?;
        written.push(path);
    }
    for p in written {
        out!("{}", p.display());
    }
    Ok(())
}

fn render(cmd: &clap::Command) -> Result<Vec<u8>, Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .map_err(|e| fail(format!("man page: {e}")))?;
    Ok(page)
}
