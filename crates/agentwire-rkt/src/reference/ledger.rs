//! The PAY ledger: every payment with a receipt, and per-payer credit that priced intents spend.

use agentwire_core::Millis;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Receipt {
    pub receipt_id: String,
    pub payer: String,
    pub amount: f64,
    pub currency: String,
    pub description: Option<String>,
    pub recipient: Option<String>,
    pub at: Millis,
}

#[derive(Debug, Default)]
pub struct Ledger {
    receipts: Vec<Receipt>,
    credit: HashMap<(String, String), f64>,
    max_receipts: usize,
}

impl Ledger {
    pub fn new(max_receipts: usize) -> Self {
        Ledger { receipts: Vec::new(), credit: HashMap::new(), max_receipts }
    }

    /// Records a payment and credits the payer; returns the payer's new balance.
    pub fn pay(&mut self, receipt: Receipt) -> f64 {
        let balance = self.credit.entry((receipt.payer.clone(), receipt.currency.clone())).or_insert(0.0);
        *balance += receipt.amount;
        let b = *balance;
        if self.receipts.len() >= self.max_receipts {
            self.receipts.remove(0);
        }
        self.receipts.push(receipt);
        b
    }

    pub fn balance(&self, payer: &str, currency: &str) -> f64 {
        self.credit.get(&(payer.to_string(), currency.to_string())).copied().unwrap_or(0.0)
    }

    /// Spends `price` of the payer's credit, or returns the balance that was too small.
    pub fn spend(&mut self, payer: &str, currency: &str, price: f64) -> Result<f64, f64> {
        let balance = self.credit.entry((payer.to_string(), currency.to_string())).or_insert(0.0);
        // Amounts are decimal fractions: allow for binary rounding.
        if *balance + 1e-9 < price {
            return Err(*balance);
        }
        *balance = (*balance - price).max(0.0);
        Ok(*balance)
    }

    pub fn receipts(&self) -> &[Receipt] {
        &self.receipts
    }
}
