//! The peer serves this machine only: a request whose Host is another name (DNS rebinding) or
//! whose Origin is another site's page gets 403, HTTP routes and WebSocket upgrades alike;
//! pages on 127.0.0.1, localhost and `[::1]`, and clients that send no Origin, are served.

mod common;

use agentwire_peer_switch::Generation;
use common::*;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Error as WsError;

/// The status of an upgrade to `url` with `headers` (`Host` replaces the URL's): 101 or the refusal's.
async fn upgrade(url: &str, headers: &[(&'static str, String)]) -> u16 {
    let mut req = url.into_client_request().unwrap();
    for (name, value) in headers {
        req.headers_mut().insert(*name, value.parse().unwrap());
    }
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req)).await {
        Ok(Ok((_, resp))) => resp.status().as_u16(),
        Ok(Err(WsError::Http(resp))) => resp.status().as_u16(),
        Ok(Err(e)) => panic!("{headers:?}: {e}"),
        Err(_) => panic!("WebSocket open timed out"),
    }
}

#[tokio::test]
async fn another_sites_page_is_refused() {
    bounded(async {
        let (h, a, _, _) = world(Generation::Current).await;
        let port = h.addr().port();
        let evil_host = format!("evil.example:{port}");
        let auth = bearer(&a.key);
        let url = format!("{}/agents/{}/connection/ws?connection_id={}", h.ws_url(), a.id, cid());
        let key = ("authorization", auth.clone());
        for refused in [
            vec![key.clone(), ("Origin", "http://evil.example".to_owned())],
            vec![key.clone(), ("Origin", "null".to_owned())],
            vec![key.clone(), ("Host", evil_host.clone())],
            vec![
                key.clone(),
                ("Host", format!("localhost.evil.example:{port}")),
                ("Origin", format!("http://localhost.evil.example:{port}")),
            ],
        ] {
            assert_eq!(upgrade(&url, &refused).await, 403, "{refused:?}");
        }
        for served in [
            vec![key.clone()],
            vec![key.clone(), ("Origin", "http://127.0.0.1:7700".to_owned())],
            vec![
                key.clone(),
                ("Host", format!("localhost:{port}")),
                ("Origin", "http://LOCALHOST:7700".to_owned()),
            ],
        ] {
            assert_eq!(upgrade(&url, &served).await, 101, "{served:?}");
        }
        // Registration with the token, from a rebound name: refused before the token counts.
        let body = r#"{"name":"evil-site"}"#;
        let token = bearer("switch-peer-registration");
        for headers in [
            vec![("host", evil_host.as_str()), ("authorization", token.as_str())],
            vec![("origin", "http://evil.example"), ("authorization", token.as_str())],
        ] {
            let r = request(h.addr(), "POST", "/agents", &headers, Some(body)).await;
            assert_eq!(r.status, 403, "{headers:?}: {}", r.body);
            assert!(r.json()["detail"].as_str().unwrap().contains("127.0.0.1"), "{}", r.body);
        }
        let r = get(&h, &format!("/agents/{}/ops", a.id), &a.key).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let r = request(
            h.addr(),
            "GET",
            &format!("/agents/{}/ops", a.id),
            &[("authorization", &auth), ("host", &evil_host)],
            None,
        )
        .await;
        assert_eq!(r.status, 403, "{}", r.body);
    })
    .await;
}
