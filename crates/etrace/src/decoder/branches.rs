//! Branch outcomes not yet consumed (`decoder.adoc` `branches`/`branch_map`, with the counts
//! of correctly predicted branches of format 0 subformat 0).

use crate::codec::bits::mask;

use super::error::DecodeError;

/// One segment of pending branch outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BSeg {
    /// Explicit outcomes, oldest in bit 0 (0 = taken).
    Map {
        /// The bits.
        bits: u64,
        /// How many.
        n: u32,
    },
    /// This many branches predicted correctly.
    Pred(u64),
    /// One branch whose prediction failed.
    Fail,
}

/// Branch outcomes not yet consumed, oldest first.
#[derive(Clone, Copy, Debug)]
pub(super) struct BranchQueue {
    pub(super) segs: [BSeg; 8],
    pub(super) head: usize,
    pub(super) len: usize,
    pub(super) total: u64,
}

impl Default for BranchQueue {
    fn default() -> Self {
        BranchQueue {
            segs: [BSeg::Fail; 8],
            head: 0,
            len: 0,
            total: 0,
        }
    }
}

/// Two queues are equal when the same outcomes wait (wherever they sit in the ring).
impl PartialEq for BranchQueue {
    fn eq(&self, other: &Self) -> bool {
        self.live() == other.live()
    }
}

impl BranchQueue {
    /// The outcomes waiting, oldest first (for comparing states).
    pub(super) fn live(&self) -> Vec<BSeg> {
        (0..self.len)
            .map(|k| self.segs[(self.head + k) % self.segs.len()])
            .collect()
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.total = 0;
    }

    #[inline]
    pub(super) fn front(&self) -> Option<&BSeg> {
        (self.len > 0).then(|| &self.segs[self.head])
    }

    pub(super) fn back_mut(&mut self) -> Option<&mut BSeg> {
        if self.len == 0 {
            return None;
        }
        let i = (self.head + self.len - 1) % self.segs.len();
        Some(&mut self.segs[i])
    }

    pub(super) fn push(&mut self, s: BSeg) -> Result<(), DecodeError> {
        if self.len == self.segs.len() {
            return Err(DecodeError::BranchOverflow);
        }
        let i = (self.head + self.len) % self.segs.len();
        self.segs[i] = s;
        self.len += 1;
        Ok(())
    }

    pub(super) fn push_map(&mut self, bits: u64, n: u32) -> Result<(), DecodeError> {
        if n == 0 {
            return Ok(());
        }
        let bits = bits & mask(n);
        if let Some(BSeg::Map { bits: b, n: m }) = self.back_mut() {
            if *m + n <= 64 {
                *b |= bits << *m;
                *m += n;
                self.total += n as u64;
                return Ok(());
            }
        }
        self.push(BSeg::Map { bits, n })?;
        self.total += n as u64;
        Ok(())
    }

    pub(super) fn push_pred(&mut self, n: u64) -> Result<(), DecodeError> {
        if n == 0 {
            return Ok(());
        }
        if let Some(BSeg::Pred(m)) = self.back_mut() {
            *m += n;
        } else {
            self.push(BSeg::Pred(n))?;
        }
        self.total += n;
        Ok(())
    }

    pub(super) fn push_fail(&mut self) -> Result<(), DecodeError> {
        self.push(BSeg::Fail)?;
        self.total += 1;
        Ok(())
    }

    pub(super) fn pop_front(&mut self) {
        self.head = (self.head + 1) % self.segs.len();
        self.len -= 1;
    }

    /// Consume the oldest outcome; `predicted` is the predictor's guess for this branch.
    #[inline]
    pub(super) fn take(&mut self, predicted: bool) -> Option<bool> {
        if self.len == 0 {
            return None;
        }
        self.total -= 1;
        let s = &mut self.segs[self.head];
        let taken = match s {
            BSeg::Map { bits, n } => {
                let t = *bits & 1 == 0;
                *bits >>= 1;
                *n -= 1;
                if *n == 0 {
                    self.pop_front();
                }
                t
            }
            BSeg::Pred(n) => {
                *n -= 1;
                if *n == 0 {
                    self.pop_front();
                }
                predicted
            }
            BSeg::Fail => {
                self.pop_front();
                !predicted
            }
        };
        Some(taken)
    }
}
