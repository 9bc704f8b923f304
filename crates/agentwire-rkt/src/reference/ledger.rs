//! The PAY ledger: every payment with a receipt, and per-payer credit that priced intents spend.

use agentwire_core::Millis;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};

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

/// Receipts (the newest `max_receipts`) and credit by `(payer, currency)`, at most
/// `max_accounts` of them.
#[derive(Debug, Default)]
pub struct Ledger {
    receipts: VecDeque<Receipt>,
    credit: HashMap<(String, String), f64>,
    max_receipts: usize,
    max_accounts: usize,
}

impl Ledger {
    pub fn new(max_receipts: usize, max_accounts: usize) -> Self {
        Ledger {
            receipts: VecDeque::new(),
            credit: HashMap::new(),
            max_receipts,
            max_accounts,
        }
    }

    /// Records a payment and credits the payer; returns the payer's new balance, or `None` when
    /// the payment would open an account past `max_accounts`.
    pub fn pay(&mut self, receipt: Receipt) -> Option<f64> {
        let account = (receipt.payer.clone(), receipt.currency.clone());
        if !self.credit.contains_key(&account) && self.credit.len() >= self.max_accounts {
            return None;
        }
        let balance = self.credit.entry(account).or_insert(0.0);
        *balance += receipt.amount;
        let b = *balance;
        if self.receipts.len() >= self.max_receipts {
            self.receipts.pop_front();
        }
        self.receipts.push_back(receipt);
        Some(b)
    }

    /// Closes the payer's account in `currency` (its receipts stay); returns the balance it held.
    pub fn close(&mut self, payer: &str, currency: &str) -> Option<f64> {
        self.credit.remove(&(payer.to_string(), currency.to_string()))
    }

    /// Open accounts.
    pub fn accounts(&self) -> usize {
        self.credit.len()
    }

    pub fn balance(&self, payer: &str, currency: &str) -> f64 {
        self.credit
            .get(&(payer.to_string(), currency.to_string()))
            .copied()
            .unwrap_or(0.0)
    }

    /// Spends `price` of the payer's credit, or returns the balance that was too small.
    pub fn spend(&mut self, payer: &str, currency: &str, price: f64) -> Result<f64, f64> {
        if price <= 0.0 {
            return Ok(self.balance(payer, currency));
        }
        let Some(balance) = self.credit.get_mut(&(payer.to_string(), currency.to_string())) else {
            return Err(0.0);
        };
        // Amounts are decimal fractions: allow for binary rounding.
        if *balance + 1e-9 < price {
            return Err(*balance);
        }
        *balance = (*balance - price).max(0.0);
        Ok(*balance)
    }

    pub fn receipts(&self) -> impl ExactSizeIterator<Item = &Receipt> {
        self.receipts.iter()
    }
}
