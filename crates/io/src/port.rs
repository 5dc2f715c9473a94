//! A packet port: one interface queue that frames are received from and sent to, whatever moves the bytes
//! (an AF_PACKET socket, an AF_XDP socket). The live router (`lwt6 run`) drives one port per worker and
//! interface; the back ends implement this trait.

use std::io;
use std::os::fd::RawFd;

/// One interface queue, used by one worker thread.
pub trait Port: Send {
    /// Receives up to `max` frames without blocking, calling `f` with each one's bytes (valid only during the
    /// call); returns how many were received (0 when none is waiting).
    fn recv_batch(&mut self, max: usize, f: &mut dyn FnMut(&[u8])) -> io::Result<usize>;

    /// Queues one frame for transmission (the bytes are copied). `Ok(false)` when the transmit ring or queue is
    /// full: the frame was not taken, and the caller counts it as dropped.
    fn send(&mut self, frame: &[u8]) -> io::Result<bool>;

    /// Hands every queued frame to the kernel.
    fn flush(&mut self) -> io::Result<()>;

    /// A descriptor that becomes readable when frames are waiting (for `poll`).
    fn raw_fd(&self) -> RawFd;

    /// The back end's name for messages and counters (`"af_packet"`, `"af_xdp"`).
    fn kind(&self) -> &'static str;

    /// Frames the kernel dropped on their way to this port because it was not keeping up (a full socket ring or
    /// receive buffer, no free frame on the fill ring): overload, counted by the kernel, cumulative since the port
    /// was opened. A system call: read it now and then, not per frame. 0 for a back end that cannot tell.
    fn kernel_rx_drops(&mut self) -> u64 {
        0
    }
}
