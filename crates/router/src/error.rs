//! The router's error: a message for people.

/// Why the router did not start, stopped in error, or why a control request failed: a message that names what
/// failed (the file and line, the interface, the socket) and, where there is one, the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
    lasting: bool,
}

impl Error {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
            lasting: false,
        }
    }

    /// An error that trying again cannot mend until someone changes something: an invalid configuration file,
    /// a capability the process lacks (`lwt6 run` exits with status 4 then, which the systemd units do not
    /// restart).
    pub fn lasting(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
            lasting: true,
        }
    }

    /// Whether this is a [`lasting`](Error::lasting) error.
    pub fn is_lasting(&self) -> bool {
        self.lasting
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<lwt6_config::LoadError> for Error {
    fn from(e: lwt6_config::LoadError) -> Self {
        Error::lasting(e.to_string())
    }
}

/// An [`Error`] saying `message` (shorthand for the many places that build one).
pub(crate) fn fail(message: impl Into<String>) -> Error {
    Error::new(message)
}
