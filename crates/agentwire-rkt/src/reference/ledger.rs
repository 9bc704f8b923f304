//! The PAY ledger: per-payer credit that payments add to and priced intents spend. A payment's
//! receipt id is in its answer only: no receipt is kept (nothing would read it).

use std::collections::HashMap;

/// Credit by `(payer, currency)`, at most `max_accounts` of them.
#[derive(Debug, Default)]
pub struct Ledger {
    credit: HashMap<(String, String), f64>,
    max_accounts: usize,
}

impl Ledger {
    pub fn new(max_accounts: usize) -> Self {
        Ledger {
            credit: HashMap::new(),
            max_accounts,
        }
    }

    /// Credits `payer` with `amount` of `currency`; returns the payer's new balance, or `None`
    /// when the payment would open an account past `max_accounts`.
    pub fn pay(&mut self, payer: &str, currency: &str, amount: f64) -> Option<f64> {
        let account = (payer.to_string(), currency.to_string());
        if !self.credit.contains_key(&account) && self.credit.len() >= self.max_accounts {
            return None;
        }
        let balance = self.credit.entry(account).or_insert(0.0);
        *balance += amount;
        Some(*balance)
    }

    /// Closes the payer's account in `currency`; returns the balance it held.
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ledger_refuses_new_accounts_only() {
        let mut l = Ledger::new(1);
        assert_eq!(l.pay("a", "RKTT", 0.5), Some(0.5));
        assert_eq!(l.pay("b", "RKTT", 0.5), None);
        assert_eq!(l.pay("a", "RKTT", 0.25), Some(0.75), "an open account takes more");
        assert_eq!(l.accounts(), 1);
    }

    #[test]
    fn spending_takes_the_price_or_refuses_a_balance_too_small() {
        let mut l = Ledger::new(4);
        l.pay("p", "RKTT", 0.75).unwrap();
        assert_eq!(l.spend("p", "RKTT", 0.25), Ok(0.5));
        assert_eq!(l.spend("p", "RKTT", 1.0), Err(0.5));
        assert_eq!(
            l.spend("p", "RKTT", 0.5 + 1e-9),
            Ok(0.0),
            "within the rounding allowance"
        );
        assert_eq!(l.balance("p", "RKTT"), 0.0);
        // 0.3 - 0.1 - 0.1 leaves a little less than 0.1 in binary: the last 0.1 is still paid.
        l.pay("q", "RKTT", 0.3).unwrap();
        for _ in 0..3 {
            assert!(l.spend("q", "RKTT", 0.1).is_ok());
        }
        assert_eq!(l.spend("q", "RKTT", 0.1), Err(0.0));
    }
}
