//! Packet bytes held while the path carries their simulator `Packet`.

use crate::wire;

/// Packet bytes beside the simulator's `Packet`, which carries the slot in `seq`.
#[derive(Default)]
pub(super) struct Slab {
    slots: Vec<Option<(Vec<u8>, bool)>>,
    free: Vec<usize>,
}

impl Slab {
    pub(super) fn insert(&mut self, bytes: Vec<u8>) -> u64 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some((bytes, false));
                i as u64
            }
            None => {
                self.slots.push(Some((bytes, false)));
                (self.slots.len() - 1) as u64
            }
        }
    }
    pub(super) fn take(&mut self, id: u64) -> (Vec<u8>, bool) {
        let slot = self.slots[id as usize].take().expect("packet slot in use");
        self.free.push(id as usize);
        slot
    }
    pub(super) fn mark_chained(&mut self, id: u64, chained: bool) {
        if let Some(slot) = self.slots[id as usize].as_mut() {
            slot.1 = chained;
        }
    }
    pub(super) fn get(&self, id: u64) -> &[u8] {
        self.slots[id as usize].as_ref().map_or(&[], |(b, _)| b)
    }
    pub(super) fn mark_ce(&mut self, id: u64) {
        if let Some((bytes, _)) = self.slots[id as usize].as_mut() {
            if wire::ecn(bytes) != 3 {
                wire::set_ce(bytes);
            }
        }
    }
    pub(super) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}
